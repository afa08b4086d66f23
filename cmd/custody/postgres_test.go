package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/postgres/pgtest"
)

// Tokens every instance of a scaled-out test is given.
const (
	pgAgentToken    = "agent-secret-0000000001"
	pgOperatorToken = "operator-secret-000001"
)

// scaledEnv is the environment of instances sharing the store at url and
// the signing key in dir.
func scaledEnv(url, dir string) map[string]string {
	return map[string]string{
		"CUSTODY_STORE": url, "CUSTODY_SIGNING_KEY": filepath.Join(dir, "signing.key"),
		"CUSTODY_AGENT_TOKENS": "bot:" + pgAgentToken, "CUSTODY_OPERATOR_TOKENS": "ana:" + pgOperatorToken,
	}
}

// TestServePostgres serves on a PostgreSQL store, then verifies and
// exports its ledger with the ledger commands.
func TestServePostgres(t *testing.T) {
	url, dir := pgtest.URL(t), t.TempDir()
	env := scaledEnv(url, dir)
	base, _, stop := startServe(t, env, "--data", filepath.Join(dir, "data"), "--store", url)
	body := post(t, base+"/v1/calls", pgAgentToken, `{"trace_id":"t1","tool":"get_time","arguments":{"zone":"UTC"}}`, 200)
	var res custody.Result
	if err := json.Unmarshal([]byte(body), &res); err != nil || res.Receipt.Seq == 0 {
		t.Fatalf("call: %s (%v)", body, err)
	}
	if code := stop(); code != exitOK {
		t.Fatalf("serve exit code %d", code)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "custody.db")); err == nil {
		t.Fatal("serve --store made a SQLite database too")
	}

	// The ledger commands read it without the key file.
	code, out, errOut := cli(t, "", "ledger", "verify", "--store", url)
	if code != exitOK || !strings.HasPrefix(out, "ok: ") || strings.Contains(out, "ok: 0 entries") {
		t.Fatalf("verify --store: exit %d: %s%s", code, out, errOut)
	}
	export, pub := filepath.Join(dir, "ledger.jsonl"), filepath.Join(dir, "ledger.pub")
	if code, _, errOut := cli(t, "", "ledger", "export", "--store", url, "--out", export, "--pubkey-out", pub); code != exitOK {
		t.Fatalf("export --store: exit %d: %s", code, errOut)
	}
	code, out, errOut = cli(t, "", "ledger", "verify", "--jsonl", export, "--pubkey", pub)
	if code != exitOK || !strings.Contains(out, "signed") {
		t.Fatalf("verify --jsonl of the export: exit %d: %s%s", code, out, errOut)
	}
	if code, out, _ := cli(t, "", "ledger", "show", "--store", url, "--trace", "t1"); code != exitOK || !strings.Contains(out, "call.succeeded") {
		t.Fatalf("show --store: exit %d: %s", code, out)
	}
}

// TestLedgerStoreRefusals: no ledger at the URL, or a URL that is not
// PostgreSQL's, is refused and creates nothing.
func TestLedgerStoreRefusals(t *testing.T) {
	url := pgtest.URL(t)
	if code, _, errOut := cli(t, "", "ledger", "verify", "--store", url); code != exitUsage || !strings.Contains(errOut, "no custody ledger") {
		t.Fatalf("verify of an empty schema: exit %d: %s", code, errOut)
	}
	if code, _, errOut := cli(t, "", "ledger", "verify", "--store", "mysql://u:secret@h/db"); code != exitFailed || !strings.Contains(errOut, "postgres://") || strings.Contains(errOut, "secret") {
		t.Fatalf("verify of a mysql URL: exit %d: %s", code, errOut)
	}
	if code, _, errOut := cli(t, "", "ledger", "verify", "--store", url, "--jsonl", "x"); code != exitUsage || !strings.Contains(errOut, "not both") {
		t.Fatalf("--store with --jsonl: exit %d: %s", code, errOut)
	}
}
