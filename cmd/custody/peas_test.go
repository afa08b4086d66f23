package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// runWith runs f on a Main over in-memory streams.
func runWith(stdin string, f func(m *Main) int) (int, string, string) {
	var out, errb bytes.Buffer
	m := &Main{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	return f(m), out.String(), errb.String()
}

func TestPeasDetect(t *testing.T) {
	tests := []struct {
		name, stdin, severity string
		code                  int
	}{
		{"Critical", `{"crash_density_per_min":1.4,"visibility_ft":150,"ambient_temp_f":24,"precipitation_type":"snow","traffic_speed_mph":55,"wind_mph":38}`, "critical", exitOK},
		{"Watch", `{"crash_density_per_min":0,"visibility_ft":9000,"ambient_temp_f":60,"traffic_speed_mph":60}`, "watch", exitOK},
		{"ErrMissingField", `{"crash_density_per_min":0,"visibility_ft":9000,"ambient_temp_f":60}`, "", exitFailed},
		{"ErrFractionalVisibility", `{"crash_density_per_min":0,"visibility_ft":90.5,"ambient_temp_f":60,"traffic_speed_mph":60}`, "", exitFailed},
		{"ErrNotJSON", `{"crash_density_per_min":`, "", exitFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runMain(t, nil, tt.stdin, "peas", "detect", "--location", "I-94:MM88-EB", "--readings", "-")
			if code != tt.code {
				t.Fatalf("exit %d, want %d (stderr %s)", code, tt.code, errs)
			}
			if tt.severity == "" {
				return
			}
			var doc struct {
				Signature struct{ Severity string }
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Signature.Severity != tt.severity {
				t.Fatalf("output %s: severity %q, want %q (%v)", out, doc.Signature.Severity, tt.severity, err)
			}
		})
	}
}

func TestDemoPeas(t *testing.T) {
	code, out, errs := runWith("", func(m *Main) int {
		return m.Run(context.Background(), []string{"demo", "peas", "--data", t.TempDir()})
	})
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	t.Log(out)
	for _, want := range []string{"signature ", "brief ", "approval ", "vms update ", "notified ", "replay     refused", "ledger     verified: ok", "1 signed checkpoint"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestDemoMesh runs the ridge-fire demo end to end: it must exit 0 only
// having checked escalation, stale capping, the broadcast's thread and the
// ledger.
func TestDemoMesh(t *testing.T) {
	code, out, errs := runWith("", func(m *Main) int {
		return m.Run(context.Background(), []string{"demo", "mesh"})
	})
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{"none above its inputs", "capped a stale node at warning", "aggregation → approval → decision → broadcast", "each approval_request_id names a real approval", "ledger     verified: ok", "signed checkpoint"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code, _, _ := runWith("", func(m *Main) int { return m.Run(context.Background(), []string{"demo", "nope"}) }); code != exitUsage {
		t.Errorf("demo nope: exit %d, want %d", code, exitUsage)
	}
}
