package main

import (
	"bytes"
	"database/sql"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/smallfs"
	"github.com/custody-dev/custody/ledger"
	"github.com/custody-dev/custody/store/sqlite"
)

// appendN appends n entries to the store in data with the CLI.
func appendN(t *testing.T, data string, n int) {
	t.Helper()
	body := writeFile(t, t.TempDir(), "body.json", `{"n":1}`)
	for range n {
		if code, _, errOut := cli(t, data, "ledger", "append", "--kind", "note", "--body", body); code != 0 {
			t.Fatalf("append: exit %d: %s", code, errOut)
		}
	}
}

func rawDB(t *testing.T, data string) *sql.DB {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+filepath.Join(data, sqlite.DatabaseFile)+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return raw
}

func rawExecCLI(t *testing.T, data string, stmts ...string) {
	t.Helper()
	raw := rawDB(t, data)
	for _, s := range stmts {
		if _, err := raw.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	raw.Close()
}

const dropGuards = `DROP TRIGGER entries_no_update; DROP TRIGGER entries_no_delete`

// forgeEntry appends an entry chained correctly onto the head with raw
// SQL, as anyone who can write the file but has no key could.
func forgeEntry(t *testing.T, data string) {
	t.Helper()
	raw := rawDB(t, data)
	var seq int64
	var head string
	if err := raw.QueryRow(`SELECT seq, lower(hex(hash)) FROM entries ORDER BY seq DESC LIMIT 1`).Scan(&seq, &head); err != nil {
		t.Fatal(err)
	}
	e := custody.Entry{Seq: seq + 1, At: custody.FormatTime(time.Now()), Kind: custody.KindApprovalDecided,
		Actor: "operator:mallory", Body: []byte(`{"decision":"approved"}`)}
	if err := new(ledger.Sealer).Seal(head, &e); err != nil {
		t.Fatal(err)
	}
	_, err := raw.Exec(`INSERT INTO entries (seq, at, kind, trace, actor, refs, body, body_sha256, hash)
		VALUES (?, ?, ?, '', ?, '{}', ?, unhex(?), unhex(?))`, e.Seq, e.At, e.Kind, e.Actor, []byte(e.Body), e.BodySHA256, e.Hash)
	if err != nil {
		t.Fatal(err)
	}
	raw.Close()
}

// TestLedgerVerifyStrict: verification fails unless a signed checkpoint
// covers the last entry, for an export and for a store;
// --allow-unsealed-tail accepts the tail and says how long it is.
func TestLedgerVerifyStrict(t *testing.T) {
	tmp := t.TempDir()
	data := filepath.Join(tmp, "data")
	appendN(t, data, 5)
	export, pub := filepath.Join(tmp, "ledger.jsonl"), filepath.Join(tmp, "ledger.pub")
	if code, _, errOut := cli(t, data, "ledger", "export", "--out", export, "--pubkey-out", pub); code != 0 {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	if code, out, errOut := cli(t, "", "ledger", "verify", "--jsonl", export, "--pubkey", pub); code != 0 {
		t.Fatalf("verify of a clean export: exit %d: %s%s", code, out, errOut)
	}
	text, _ := os.ReadFile(export)
	lines := strings.SplitAfter(strings.TrimSuffix(string(text), "\n"), "\n")
	for len(lines) > 0 && strings.HasPrefix(lines[len(lines)-1], `{"note"`) {
		lines = lines[:len(lines)-1] // the checkpoint's signed note rides after it
	}
	if !strings.HasPrefix(lines[len(lines)-1], `{"checkpoint"`) {
		t.Fatalf("the export does not end with a checkpoint: %q", lines[len(lines)-1])
	}
	cut := writeFile(t, tmp, "cut.jsonl", strings.Join(lines[:len(lines)-1], ""))

	// The chain rewritten consistently from seq 2 on, checkpoints dropped.
	d := ledger.NewDecoder(bytes.NewReader(text))
	var rewritten []byte
	prev := ""
	for {
		l, err := d.Next()
		if err != nil {
			break
		}
		if l.Entry == nil {
			continue
		}
		e := *l.Entry
		if e.Seq == 2 {
			e.Body = []byte(`{"n":2}`)
		}
		if err := new(ledger.Sealer).Seal(prev, &e); err != nil {
			t.Fatal(err)
		}
		prev = e.Hash
		rewritten = ledger.AppendEntryLine(rewritten, &e)
	}
	rewrittenFile := writeFile(t, tmp, "rewritten.jsonl", string(rewritten))

	tests := []struct {
		name string
		args []string
		code int
		says string
	}{
		{"CutTail", []string{"--jsonl", cut, "--pubkey", pub}, exitFailed, "FAILED at seq 5"},
		{"CutTailAllowed", []string{"--jsonl", cut, "--pubkey", pub, "--allow-unsealed-tail"}, exitOK, "unsealed tail: 1 entry after the last checkpoint (seq 5 to 5)"},
		{"Rewritten", []string{"--jsonl", rewrittenFile, "--pubkey", pub}, exitFailed, "no checkpoint covers any of the 5 entries"},
		{"RewrittenNoKey", []string{"--jsonl", rewrittenFile}, exitFailed, "no checkpoint covers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := cli(t, "", append([]string{"ledger", "verify"}, tt.args...)...)
			if code != tt.code || !strings.Contains(out+errOut, tt.says) {
				t.Fatalf("exit %d: %s%s; want exit %d saying %q", code, out, errOut, tt.code, tt.says)
			}
		})
	}

	// The store cut, with the checkpoints that covered the cut.
	rawExecCLI(t, data, dropGuards, `DELETE FROM entries WHERE seq > 3`, `DELETE FROM checkpoints WHERE size > 3`)
	code, out, errOut := cli(t, data, "ledger", "verify")
	if code == exitOK || !strings.Contains(errOut, "entries were removed") {
		t.Fatalf("verify of a cut store: exit %d: %s%s", code, out, errOut)
	}
}

// TestLedgerAppendRefusesForgedTail: a command that opens the store to
// write does not sign a checkpoint over an entry appended after the last
// one by someone without the key; `ledger seal --accept-tail` does, and
// records it.
func TestLedgerAppendRefusesForgedTail(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	appendN(t, data, 3)
	forgeEntry(t, data)
	body := writeFile(t, t.TempDir(), "body.json", `{"n":1}`)
	code, _, errOut := cli(t, data, "ledger", "append", "--kind", "note", "--body", body)
	if code == exitOK || !strings.Contains(errOut, "seq 4 to 4 were appended after the last checkpoint") {
		t.Fatalf("append over a forged tail: exit %d: %s", code, errOut)
	}
	if code, _, errOut := cli(t, data, "ledger", "verify"); code != exitFailed || !strings.Contains(errOut, "FAILED at seq 4") {
		t.Fatalf("strict verify of the forged tail: exit %d: %s", code, errOut)
	}
	if code, out, errOut := cli(t, data, "ledger", "seal", "--accept-tail"); code != exitOK || !strings.Contains(out, "covers 5 entries") {
		t.Fatalf("seal --accept-tail: exit %d: %s%s", code, out, errOut)
	}
	if code, out, _ := cli(t, data, "ledger", "show", "--kind", sqlite.KindTailAccepted); code != exitOK || !strings.Contains(out, sqlite.KindTailAccepted) {
		t.Fatalf("the acceptance is not on the ledger: %s", out)
	}
	appendN(t, data, 1)
}

// TestLedgerAppendRefusesTamperedTail: a command that opens the store to
// write checks the chain since the last checkpoint and refuses a tampered
// one, naming the seq.
func TestLedgerAppendRefusesTamperedTail(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	appendN(t, data, 3)
	rawExecCLI(t, data, dropGuards, `UPDATE entries SET kind = 'other' WHERE seq = 3`)
	body := writeFile(t, t.TempDir(), "body.json", `{"n":1}`)
	code, _, errOut := cli(t, data, "ledger", "append", "--kind", "note", "--body", body)
	if code == exitOK || !strings.Contains(errOut, "seq 3: hash does not match") {
		t.Fatalf("append to a tampered ledger: exit %d: %s", code, errOut)
	}
}

// TestLedgerLostKey: a lost signing.key is not silently replaced; the
// store refuses to start until `ledger rotate-key`, which the ledger
// records, and the export then verifies across the rotation.
func TestLedgerLostKey(t *testing.T) {
	tmp := t.TempDir()
	data := filepath.Join(tmp, "data")
	appendN(t, data, 3)
	pubBefore, _ := os.ReadFile(filepath.Join(data, "signing.pub"))
	os.Remove(filepath.Join(data, "signing.key"))
	body := writeFile(t, tmp, "body.json", `{"n":1}`)
	code, _, errOut := cli(t, data, "ledger", "append", "--kind", "note", "--body", body)
	if code == exitOK || !strings.Contains(errOut, "signing.key is missing") || !strings.Contains(errOut, "rotate-key") {
		t.Fatalf("append without the signing key: exit %d: %s", code, errOut)
	}
	if now, _ := os.ReadFile(filepath.Join(data, "signing.pub")); !bytes.Equal(now, pubBefore) {
		t.Fatal("signing.pub was overwritten")
	}
	if code, out, errOut := cli(t, data, "ledger", "rotate-key"); code != exitOK || !strings.Contains(out, "rotated") {
		t.Fatalf("rotate-key: exit %d: %s%s", code, out, errOut)
	}
	appendN(t, data, 2)
	if code, out, errOut := cli(t, data, "ledger", "verify"); code != exitOK || !strings.HasPrefix(out, "ok: 6 entries") {
		t.Fatalf("verify after the rotation: exit %d: %s%s", code, out, errOut)
	}
	export, pub := filepath.Join(tmp, "ledger.jsonl"), filepath.Join(tmp, "ledger.pub")
	if code, _, errOut := cli(t, data, "ledger", "export", "--out", export, "--pubkey-out", pub); code != 0 {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	if code, out, errOut := cli(t, "", "ledger", "verify", "--jsonl", export, "--pubkey", pub); code != exitOK {
		t.Fatalf("verify --jsonl across the rotation: exit %d: %s%s", code, out, errOut)
	}
	old := writeFile(t, tmp, "old.pub", string(pubBefore))
	if code, _, errOut := cli(t, "", "ledger", "verify", "--jsonl", export, "--pubkey", old); code != exitFailed || !strings.Contains(errOut, "not a trusted key") {
		t.Fatalf("verify --jsonl with the old key alone: exit %d: %s", code, errOut)
	}
}

// TestDataDirectoryPrivate: a data directory made by custody, or given
// to it empty, is 0700 and its files 0600.
func TestDataDirectoryPrivate(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(data, 0o755)
	appendN(t, data, 1)
	fi, _ := os.Stat(data)
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("data directory mode %#o, want 0700", fi.Mode().Perm())
	}
	for _, name := range []string{sqlite.DatabaseFile, "signing.key"} {
		fi, err := os.Stat(filepath.Join(data, name))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v; want 0600", name, fi.Mode().Perm(), err)
		}
	}
}

func healthz(t *testing.T, base string) (int, string) {
	t.Helper()
	return fetch(t, base+"/healthz", "")
}

// TestServeDatabaseRemoved: custody.db removed under a running serve
// makes calls fail and /healthz answer 503; a restart refuses to create a
// new ledger beside the old key.
func TestServeDatabaseRemoved(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	base, _, stop := startServe(t, map[string]string{}, "--data", data)
	agent := readToken(t, filepath.Join(data, agentTokenFile))
	post(t, base+"/v1/calls", agent, `{"tool":"get_time","arguments":{"zone":"UTC"}}`, 200)
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(filepath.Join(data, sqlite.DatabaseFile+suffix))
	}
	post(t, base+"/v1/calls", agent, `{"tool":"get_time","arguments":{"zone":"UTC"}}`, 503)
	if code, body := healthz(t, base); code != http.StatusServiceUnavailable || !strings.Contains(body, "removed or replaced") {
		t.Fatalf("healthz after the database went: %d %s", code, body)
	}
	stop()
	m := &Main{Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, Getenv: func(string) string { return "" }}
	if code := m.Run(t.Context(), []string{"serve", "--addr", "127.0.0.1:0", "--data", data}); code == exitOK ||
		!strings.Contains(m.Stderr.(*bytes.Buffer).String(), "custody.db is missing") {
		t.Fatalf("serve on a data directory whose database went: exit %d: %s", code, m.Stderr)
	}
}

// TestServeHealthzFullDisk: /healthz answers 503, saying the disk is
// full, once a write was refused for want of space, and 200 again once a
// write succeeds.
func TestServeHealthzFullDisk(t *testing.T) {
	data := smallfs.Mount(t, 4<<20)
	base, _, stop := startServe(t, map[string]string{}, "--data", data)
	defer stop()
	agent := readToken(t, filepath.Join(data, agentTokenFile))
	free := smallfs.Fill(t, data, 1<<20)
	arg := `{"title":"t","text":"` + strings.Repeat("X", 3900) + `"}`
	refused := false
	for range 2000 {
		code, _ := postCode(t, base+"/v1/calls", agent, `{"trace_id":"full","tool":"write_note","arguments":`+arg+`}`)
		if code == http.StatusServiceUnavailable {
			refused = true
			break
		}
	}
	if !refused {
		t.Fatal("2000 calls of 4 KB fit on a 4 MB filesystem")
	}
	// What little is left goes too, so that every write is refused.
	rest := fillUp(t, data)
	for i := 0; ; i++ {
		// The log may still have room in frames it reuses.
		code, _ := postCode(t, base+"/v1/calls", agent, `{"tool":"get_time","arguments":{"zone":"UTC"}}`)
		if code == http.StatusServiceUnavailable {
			break
		}
		if i == 1000 {
			t.Fatalf("1000 calls succeeded on a full disk")
		}
	}
	if code, body := healthz(t, base); code != http.StatusServiceUnavailable || !strings.Contains(body, "disk full") {
		t.Fatalf("healthz after a refused write: %d %s", code, body)
	}
	rest()
	free()
	post(t, base+"/v1/calls", agent, `{"tool":"get_time","arguments":{"zone":"UTC"}}`, 200)
	if code, body := healthz(t, base); code != http.StatusOK {
		t.Fatalf("healthz after a write succeeded: %d %s", code, body)
	}
}

// fillUp writes a file in dir until the filesystem is full and returns
// a function that removes it.
func fillUp(t *testing.T, dir string) (free func()) {
	t.Helper()
	f, err := os.CreateTemp(dir, "rest")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	f.Sync()
	return func() { os.Remove(f.Name()) }
}

func postCode(t *testing.T, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(res.Body)
	return res.StatusCode, b.String()
}

// TestServeSealsAtShutdown: serve stopped cleanly leaves every entry
// under a signed checkpoint, its own and those a crash left unsealed, so
// that the store and its export verify strictly.
func TestServeSealsAtShutdown(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	appendN(t, data, 3)
	// As a crash leaves it: the last entries after the last checkpoint.
	rawExecCLI(t, data, `DELETE FROM checkpoints WHERE size = 3`)
	os.Remove(filepath.Join(data, "last-checkpoint.json"))
	if code, _, _ := cli(t, data, "ledger", "verify"); code != exitFailed {
		t.Fatalf("strict verify of an unsealed tail: exit %d", code)
	}
	_, _, stop := startServe(t, map[string]string{}, "--data", data)
	if code := stop(); code != exitOK {
		t.Fatalf("serve exit %d", code)
	}
	if code, out, errOut := cli(t, data, "ledger", "verify"); code != exitOK || !strings.HasPrefix(out, "ok: 3 entries") {
		t.Fatalf("strict verify after a clean stop: exit %d: %s%s", code, out, errOut)
	}
}
