package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/store/postgres"
	"github.com/custody-dev/custody/store/postgres/pgtest"
	"github.com/custody-dev/custody/store/sqlite"
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
	body = writeFile(t, dir, "body.json", `{"n":1}`)
	keyEnv := map[string]string{"CUSTODY_SIGNING_KEY": env["CUSTODY_SIGNING_KEY"]}
	if code, out, errOut := runMain(t, keyEnv, "", "ledger", "append", "--store", url, "--kind", "note", "--body", body, "--trace", "t9"); code != exitOK || !strings.Contains(out, `"seq"`) {
		t.Fatalf("append --store: exit %d: %s%s", code, out, errOut)
	}
	if code, out, _ := cli(t, "", "ledger", "show", "--store", url, "--trace", "t9"); code != exitOK || !strings.Contains(out, "note") {
		t.Fatalf("show --store of the appended entry: exit %d: %s", code, out)
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

// TestStoreCopy moves a SQLite store with a consumed, edited approval
// into PostgreSQL: the copy verifies with the source's key, and a server
// on it knows the approval as the source did.
func TestStoreCopy(t *testing.T) {
	url, dir := pgtest.URL(t), t.TempDir()
	data := filepath.Join(dir, "data")
	postTo := post
	post := `{"channel":"ops","message":"HELLO"}`
	edited := `{"channel":"ops","message":"HELLO WORLD"}`
	_, out, _ := runMain(t, nil, post, "call", "--tool", "post_announcement", "--args", "-", "--trace", "t1", "--data", data)
	id := decodeCall(t, out).Error.Approval
	if code, out, errOut := runMain(t, nil, "", "approvals", "approve", id, "--operator", "op-1", "--set", "message=HELLO WORLD", "--data", data); code != exitOK {
		t.Fatalf("approve: exit %d: %s%s", code, out, errOut)
	}
	if code, out, _ := runMain(t, nil, edited, "call", "--tool", "post_announcement", "--args", "-", "--trace", "t1", "--data", data); code != exitOK {
		t.Fatalf("edited call: exit %d: %s", code, out)
	}

	env := map[string]string{"CUSTODY_STORE": "postgres://ignored/for/the/source"}
	code, out, errOut := runMain(t, env, "", "store", "copy", "--from", data, "--to", url)
	if code != exitOK || !strings.Contains(out, "copied") {
		t.Fatalf("store copy: exit %d: %s%s", code, out, errOut)
	}
	code, out, errOut = runMain(t, nil, "", "ledger", "verify", "--store", url, "--pubkey", filepath.Join(data, "signing.pub"))
	if code != exitOK || !strings.Contains(out, "signed") {
		t.Fatalf("verify the copy with the source's key: exit %d: %s%s", code, out, errOut)
	}
	sameState(t, data, url)
	if code, _, errOut := runMain(t, nil, "", "store", "copy", "--from", data, "--to", url); code != exitFailed || !strings.Contains(errOut, "not empty") {
		t.Fatalf("a second copy into the same store: exit %d: %s", code, errOut)
	}

	// A server on the copy refuses the original arguments (the operator
	// edited them) and a replay of the edited ones (the approval is used).
	senv := scaledEnv(url, dir)
	senv["CUSTODY_SIGNING_KEY"] = filepath.Join(data, "signing.key")
	senv["CUSTODY_AGENT_TOKENS"] = "cli:" + pgAgentToken // the agent custody call names
	base, _, stop := startServe(t, senv, "--data", filepath.Join(dir, "serve"))
	defer stop()
	call := func(args string) string {
		return `{"trace_id":"t1","tool":"post_announcement","arguments":` + args + `}`
	}
	if body := postTo(t, base+"/v1/calls", pgAgentToken, call(post), 403); !strings.Contains(body, id) || strings.Contains(body, "another agent") {
		t.Fatalf("original arguments on the copy: %s; want denied for the approval's edit", body)
	}
	if body := postTo(t, base+"/v1/calls", pgAgentToken, call(edited), 409); !strings.Contains(body, id) {
		t.Fatalf("edited arguments on the copy: %s; want the used approval named", body)
	}
}

// sameState checks that the SQLite store in data and the PostgreSQL one at
// url hold the same state documents.
func sameState(t *testing.T, data, url string) {
	t.Helper()
	ctx := context.Background()
	src, err := sqlite.Open(context.Background(), data, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := postgres.Open(ctx, url, postgres.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	nss, err := src.Namespaces(ctx)
	if err != nil || len(nss) == 0 {
		t.Fatalf("source namespaces %v, %v; want some", nss, err)
	}
	for _, ns := range nss {
		want, err1 := src.States(ctx, ns)
		got, err2 := dst.States(ctx, ns)
		if err1 != nil || err2 != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("state %s: copy %v (%v), source %v (%v)", ns, got, err2, want, err1)
		}
	}
}

// TestBenchGatewayPostgres runs the bench on two instances on PostgreSQL
// with the raw baseline beside, flushed at each commit or pipelined, and
// leaves no scratch schema behind.
func TestBenchGatewayPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("benchmark run skipped in -short mode")
	}
	url := pgtest.URL(t)
	before := scratchSchemas(t, url)
	for _, mode := range []string{"full", "pipelined"} {
		code, out, errOut := runMain(t, nil, "", "bench", "gateway", "--store", url, "--instances", "2", "--callers", "4",
			"--calls", "40", "--rounds", "2", "--baseline-sync", mode)
		if code != exitOK {
			t.Fatalf("exit %d: %s %s", code, out, errOut)
		}
		// A fixed count of calls on every side, each acknowledged insert
		// a committed row.
		if m := regexp.MustCompile(`(?m)^gateway: (\d+) calls, `).FindStringSubmatch(out); m == nil || m[1] != "40" {
			t.Errorf("the gateway did not make 40 calls in:\n%s", out)
		}
		if inserts := baselineInserts(t, out); inserts != 40 {
			t.Errorf("the baseline made %d inserts, want 40", inserts)
		}
		if m := regexp.MustCompile(`(?m)^floor: (\d+) inserts, .*; (\d+) rows in \d+ commits`).FindStringSubmatch(out); m == nil || m[1] != "40" || m[2] != "40" {
			t.Errorf("the floor did not make 40 inserts, each a committed row, in:\n%s", out)
		}
		res := lastBenchResult(t, out)
		if res.CallsPerS <= 0 || res.BaselinePerS <= 0 || res.Ratio <= 0 || res.EntriesPerCommit < 1 || res.BaselineSync != mode ||
			res.LockFloorPerS <= 0 || res.RatioToFloor <= 0 || res.LockFloorRowsPerCommit < 1 ||
			!strings.Contains(out, "2 instances") || !strings.Contains(out, "2 writers, each group under the chain head's lock") {
			t.Fatalf("result = %+v\n%s", res, out)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var fields map[string]any
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &fields); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"floor_inserts_per_s", "ratio_to_floor"} {
			if v, ok := fields[name].(float64); !ok || v <= 0 {
				t.Errorf("%s = %v in the result, want a positive number", name, fields[name])
			}
		}
	}
	// Only the schemas this test's runs made: another run on the same
	// server (a second test suite) may hold scratch schemas of its own.
	for name := range scratchSchemas(t, url) {
		if !before[name] {
			t.Errorf("scratch schema %s left", name)
		}
	}
}

// scratchSchemas returns the names of the bench's scratch schemas on the
// server at url.
func scratchSchemas(t *testing.T, url string) map[string]bool {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT nspname FROM pg_namespace WHERE nspname LIKE 'custody_bench_%' OR nspname LIKE 'custody_raw_%' OR nspname LIKE 'custody_floor_%'`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out
}

// TestScratchRunsIgnoreStore: the bench on SQLite and the demos run in
// scratch directories even where CUSTODY_STORE names a shared store,
// which they must never write to.
func TestScratchRunsIgnoreStore(t *testing.T) {
	env := map[string]string{"CUSTODY_STORE": "postgres://nobody@127.0.0.1:1/none?connect_timeout=1"}
	code, out, errOut := runMain(t, env, "", "bench", "gateway", "--callers", "2", "--calls", "10", "--rounds", "1", "--baseline=false")
	if code != exitOK {
		t.Fatalf("bench with CUSTODY_STORE set: exit %d: %s%s", code, out, errOut)
	}
	if code, _, errOut := runMain(t, env, "", "ledger", "verify", "--data", t.TempDir()); code == exitOK || !strings.Contains(errOut, "unavailable") {
		t.Fatalf("ledger verify with an unreachable store: exit %d: %s; want it refused as unavailable", code, errOut)
	}
}

// TestServePostgresFromConfig names the store in the config file, with the
// URL read from the environment.
func TestServePostgresFromConfig(t *testing.T) {
	url, dir := pgtest.URL(t), t.TempDir()
	env := scaledEnv(url, dir)
	delete(env, "CUSTODY_STORE")
	env["CUSTODY_TEST_PG"] = url
	cfg := filepath.Join(dir, "custody.json")
	if err := os.WriteFile(cfg, []byte(`{"store":"${env:CUSTODY_TEST_PG}"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	base, _, stop := startServe(t, env, "--data", filepath.Join(dir, "data"), "--config", cfg)
	post(t, base+"/v1/calls", pgAgentToken, `{"trace_id":"t1","tool":"get_time","arguments":{"zone":"UTC"}}`, 200)
	if code := stop(); code != exitOK {
		t.Fatalf("serve exit code %d", code)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "custody.db")); err == nil {
		t.Fatal("a config naming a PostgreSQL store made a SQLite database")
	}
	if code, out, errOut := cli(t, "", "ledger", "verify", "--store", url); code != exitOK || strings.Contains(out, "ok: 0 entries") {
		t.Fatalf("verify --store: exit %d: %s%s", code, out, errOut)
	}
}
