package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
)

// cli runs the program in-process with CUSTODY_DATA set to data and
// returns the exit code, stdout and stderr.
func cli(t *testing.T, data string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	m := &Main{
		Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		Getenv: func(k string) string {
			if k == "CUSTODY_DATA" {
				return data
			}
			return ""
		},
	}
	code := m.Run(context.Background(), args)
	return code, stdout.String(), stderr.String()
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLedgerCommands(t *testing.T) {
	tmp := t.TempDir()
	data := filepath.Join(tmp, "data")

	// append
	for i, body := range []string{`{"n":1}`, `{"n":2, "msg":"slow"}`, `{"n":3}`} {
		file := writeFile(t, tmp, "body.json", body)
		args := []string{"ledger", "append", "--kind", "note", "--body", file, "--trace", "t1", "--ref", "approval_request_id=ap-1"}
		if i == 2 {
			args = []string{"ledger", "append", "--kind", "other", "--body", file, "--trace", "t2"}
		}
		code, out, errOut := cli(t, data, args...)
		if code != 0 {
			t.Fatalf("append %d: exit %d: %s", i, code, errOut)
		}
		var r custody.Receipt
		if err := json.Unmarshal([]byte(out), &r); err != nil || r.Seq != int64(i+1) || len(r.Hash) != 64 {
			t.Fatalf("append %d printed %q (%v), want a receipt for seq %d", i, out, err, i+1)
		}
	}

	// show
	code, out, errOut := cli(t, data, "ledger", "show", "--trace", "t1")
	if code != 0 {
		t.Fatalf("show: exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "note") || !strings.Contains(lines[1], "approval_request_id=ap-1") || strings.Contains(out, "other") {
		t.Fatalf("show --trace t1 printed:\n%s", out)
	}
	code, out, _ = cli(t, data, "ledger", "show", "--json", "--kind", "other")
	if code != 0 || strings.Count(out, "\n") != 1 || !strings.Contains(out, `"seq":3`) {
		t.Fatalf("show --json --kind other: exit %d:\n%s", code, out)
	}

	// export, verify
	export, pub := filepath.Join(tmp, "ledger.jsonl"), filepath.Join(tmp, "ledger.pub")
	if code, _, errOut := cli(t, data, "ledger", "export", "--out", export, "--pubkey-out", pub); code != 0 {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	code, out, errOut = cli(t, "", "ledger", "verify", "--jsonl", export, "--pubkey", pub)
	if code != 0 || !strings.HasPrefix(out, "ok: 3 entries") || !strings.Contains(out, "signed") {
		t.Fatalf("verify --jsonl: exit %d: %s%s", code, out, errOut)
	}
	if code, out, errOut := cli(t, data, "ledger", "verify"); code != 0 || !strings.HasPrefix(out, "ok: 3 entries") {
		t.Fatalf("verify --data: exit %d: %s%s", code, out, errOut)
	}

	// tamper with one byte of the export
	text, _ := os.ReadFile(export)
	tampered := bytes.Replace(text, []byte(`"n":2`), []byte(`"n":7`), 1)
	if bytes.Equal(tampered, text) {
		t.Fatal("test export does not hold the body to tamper with")
	}
	bad := writeFile(t, tmp, "tampered.jsonl", string(tampered))
	code, _, errOut = cli(t, "", "ledger", "verify", "--jsonl", bad, "--pubkey", pub)
	if code != 1 || !strings.Contains(errOut, "seq 2") {
		t.Fatalf("verify of a tampered export: exit %d: %s; want exit 1 naming seq 2", code, errOut)
	}
}

func TestLedgerUsageErrors(t *testing.T) {
	tmp := t.TempDir()
	missing := filepath.Join(tmp, "none")
	body := writeFile(t, tmp, "body.json", `{"a":1,"a":2}`)
	tests := []struct {
		name string
		args []string
		code int
		says string
	}{
		{"NoSubcommand", []string{"ledger"}, exitUsage, "usage"},
		{"UnknownSubcommand", []string{"ledger", "frob"}, exitUsage, "unknown"},
		{"NoStore", []string{"ledger", "verify", "--data", missing}, exitUsage, "no store"},
		{"UnreadableExport", []string{"ledger", "verify", "--jsonl", missing}, exitUsage, "no such file"},
		{"BadPubkey", []string{"ledger", "verify", "--jsonl", body, "--pubkey", body}, exitUsage, "public key"},
		{"DataAndJSONL", []string{"ledger", "verify", "--data", tmp, "--jsonl", body}, exitUsage, "not both"},
		{"AppendWithoutKind", []string{"ledger", "append", "--body", body}, exitUsage, "required"},
		{"AppendDuplicateKey", []string{"ledger", "append", "--data", filepath.Join(tmp, "d"), "--kind", "k", "--body", body}, exitFailed, "duplicate"},
		{"ShowNoStore", []string{"ledger", "show", "--data", missing}, exitUsage, "no store"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := cli(t, missing, tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.says) {
				t.Fatalf("exit %d, stderr %q; want exit %d mentioning %q", code, errOut, tt.code, tt.says)
			}
		})
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatal("a read command created the missing data directory")
	}
}
