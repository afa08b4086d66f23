package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/custody-dev/custody/assure"
)

func TestAssureLint(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	bad := filepath.Join(dir, "bad.json")
	raw := assure.WardRoundEnvelope()
	broken := strings.Replace(string(raw), `"EXECUTES_REVERSIBLE_ACTIONS"`, `"ADVISORY_ONLY"`, 1)
	broken = strings.Replace(broken, `"synthetic_only": true`, `"synthetic_only": false`, 1)
	for name, b := range map[string][]byte{good: raw, bad: []byte(broken)} {
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, file string
		code       int
		want       string
	}{
		{"OK", good, exitOK, "ok: DF-CAE-WARD-ROUND-001"},
		{"ErrContract", bad, exitFailed, "data_policy.synthetic_only: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runMain(t, nil, "", "assure", "lint", tt.file)
			if code != tt.code || !strings.Contains(out, tt.want) {
				t.Fatalf("exit %d, want %d; stdout %q want %q; stderr %s", code, tt.code, out, tt.want, errs)
			}
			if tt.code == exitFailed {
				for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
					if !strings.HasPrefix(line, tt.file+": ") {
						t.Errorf("problem line %q does not name the file and field", line)
					}
				}
			}
		})
	}
}

func TestAssureRunVerifyRetest(t *testing.T) {
	dir := t.TempDir()
	envFile := filepath.Join(dir, "envelope.json")
	if err := os.WriteFile(envFile, assure.WardRoundEnvelope(), 0o644); err != nil {
		t.Fatal(err)
	}
	pack, pack2 := filepath.Join(dir, "pack"), filepath.Join(dir, "pack2")
	code, out, errs := runMain(t, nil, "", "assure", "run", "--envelope", envFile, "--target", "scripted:naive", "--cases", "1", "--seed", "3", "--out", pack)
	if code != exitOK || !strings.Contains(out, "6 findings") || !strings.Contains(errs, "trace 7/7") {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, _ = runMain(t, nil, "", "assure", "verify", pack)
	if code != exitOK || !strings.Contains(out, "6 findings confirmed") {
		t.Fatalf("verify: exit %d %s", code, out)
	}
	code, out, errs = runMain(t, nil, "", "assure", "retest", "--pack", pack, "--target", "scripted:careful", "--out", pack2)
	if code != exitOK || !strings.Contains(out, "6 resolved, 0 persist, 0 new") {
		t.Fatalf("retest: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, _ = runMain(t, nil, "", "assure", "verify", pack2)
	if code != exitOK || !strings.Contains(out, "original checked") {
		t.Fatalf("verify retest: exit %d %s", code, out)
	}
	findings := filepath.Join(pack, assure.FileFindings)
	if err := os.WriteFile(findings, []byte("[]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runMain(t, nil, "", "assure", "verify", pack)
	if code != exitFailed || !strings.Contains(out, "FAIL findings.json:") {
		t.Fatalf("verify of a tampered pack: exit %d %s", code, out)
	}
}

func TestAssureRunRefusesTarget(t *testing.T) {
	env := filepath.Join(t.TempDir(), "e.json")
	if err := os.WriteFile(env, assure.WardRoundEnvelope(), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runMain(t, nil, "", "assure", "run", "--envelope", env, "--target", "scripted:reckless", "--out", filepath.Join(t.TempDir(), "p"))
	if code != exitFailed || !strings.Contains(errs, "scripted:reckless") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}
