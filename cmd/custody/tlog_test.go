package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/bench"
	"github.com/custody-dev/custody/store/sqlite"
	"github.com/custody-dev/custody/tlog"
)

// ledgerWithCheckpoints makes a store of n entries, checkpointed every 16.
func ledgerWithCheckpoints(t *testing.T, n int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	db, err := sqlite.Open(context.Background(), dir, sqlite.Options{CheckpointEvery: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range n {
		if _, err := db.Append(context.Background(), sampleEntry(i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestLedgerProveAndCheckReceipt(t *testing.T) {
	data := ledgerWithCheckpoints(t, 40)
	tmp := t.TempDir()
	code, out, errOut := cli(t, data, "ledger", "prove", "--seq", "5")
	if code != 0 {
		t.Fatalf("prove: exit %d: %s", code, errOut)
	}
	receipt := writeFile(t, tmp, "receipt.json", out)
	pub := filepath.Join(data, "signing.pub")
	code, out, errOut = cli(t, data, "ledger", "check-receipt", receipt, "--pubkey", pub)
	if code != 0 || !strings.HasPrefix(out, "ok: entry 5 ") || !strings.Contains(out, "checkpoint 40 of custody/ledger/") {
		t.Fatalf("check-receipt: exit %d: %s%s", code, out, errOut)
	}
	code, out, errOut = cli(t, data, "ledger", "prove", "--seq", "5", "--size", "16")
	if code != 0 {
		t.Fatalf("prove in 16: exit %d: %s", code, errOut)
	}
	if code, _, errOut = cli(t, data, "ledger", "check-receipt", writeFile(t, tmp, "r16.json", out), "--pubkey", pub); code != 0 {
		t.Fatalf("check-receipt in 16: %s", errOut)
	}
	code, out, errOut = cli(t, data, "ledger", "prove", "--from", "16", "--to", "40")
	var c tlog.Consistency
	if err := json.Unmarshal([]byte(out), &c); code != 0 || err != nil || c.From != 16 || c.To != 40 {
		t.Fatalf("prove consistency: exit %d: %s%s", code, out, errOut)
	}

	// A call's result fetched with ?proof=1 carries the receipt.
	wrapped := writeFile(t, tmp, "result.json", `{"trace_id":"t","output":{},"receipt":{"seq":5},"inclusion":`+string(mustRead(t, receipt))+`}`)
	if code, out, errOut := cli(t, data, "ledger", "check-receipt", wrapped, "--pubkey", pub); code != 0 || !strings.HasPrefix(out, "ok: entry 5 ") {
		t.Fatalf("check-receipt of a call's result: exit %d: %s%s", code, out, errOut)
	}

	// Refusals: another entry's hash, another key, a receipt of nothing.
	var r tlog.Receipt
	if err := json.Unmarshal(mustRead(t, receipt), &r); err != nil {
		t.Fatal(err)
	}
	other := ledgerWithCheckpoints(t, 3)
	r.Hash = strings.Repeat("ab", 32)
	forged, _ := json.Marshal(r)
	cases := map[string]struct {
		args []string
		code int
		msg  string
	}{
		"ErrTamperedEntry": {[]string{writeFile(t, tmp, "forged.json", string(forged)), "--pubkey", pub}, exitFailed, "FAILED"},
		"ErrOtherKey":      {[]string{receipt, "--pubkey", filepath.Join(other, "signing.pub")}, exitFailed, "FAILED"},
		"ErrOtherOrigin":   {[]string{receipt, "--pubkey", pub, "--origin", "custody/ledger/elsewhere"}, exitFailed, "FAILED"},
		"ErrNotReceipt":    {[]string{writeFile(t, tmp, "x.json", `{"seq":1,"hash":"x"}`), "--pubkey", pub}, exitUsage, "no checkpoint"},
		"ErrNoPubkey":      {[]string{receipt}, exitUsage, "--pubkey"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			code, _, errOut := cli(t, data, append([]string{"ledger", "check-receipt"}, tc.args...)...)
			if code != tc.code || !strings.Contains(errOut, tc.msg) {
				t.Fatalf("exit %d, want %d with %q: %s", code, tc.code, tc.msg, errOut)
			}
		})
	}
	if code, _, _ := cli(t, data, "ledger", "prove", "--seq", "41"); code == 0 {
		t.Fatal("prove of an entry no checkpoint covers succeeded")
	}
}

func TestLedgerVerifyNotes(t *testing.T) {
	data := ledgerWithCheckpoints(t, 40)
	code, out, errOut := cli(t, data, "ledger", "verify")
	if code != 0 || !strings.Contains(out, "ok: 3 checkpoint notes match the Merkle tree") {
		t.Fatalf("verify: exit %d: %s%s", code, out, errOut)
	}
	export := filepath.Join(t.TempDir(), "ledger.jsonl")
	if code, _, errOut := cli(t, data, "ledger", "export", "--out", export); code != 0 {
		t.Fatal(errOut)
	}
	pub := filepath.Join(data, "signing.pub")
	code, out, errOut = cli(t, data, "ledger", "verify", "--jsonl", export, "--pubkey", pub)
	if code != 0 || !strings.Contains(out, "3 checkpoint notes") {
		t.Fatalf("verify --jsonl: exit %d: %s%s", code, out, errOut)
	}
	// A witness key without cosignatures: the first note is named.
	_, vkey := newWitnessKey(t, "witness.test/w1")
	code, _, errOut = cli(t, data, "ledger", "verify", "--jsonl", export, "--pubkey", pub, "--witness-key", vkey)
	if code != exitFailed || !strings.Contains(errOut, "FAILED at checkpoint 16: lacks a consistent cosignature") {
		t.Fatalf("verify --witness-key without cosignatures: exit %d: %s", code, errOut)
	}
	code, _, errOut = cli(t, data, "ledger", "verify", "--witness-key", "garbage")
	if code != exitUsage {
		t.Fatalf("verify with a bad witness key: exit %d: %s", code, errOut)
	}
	// A note whose root does not match the entries.
	text := string(mustRead(t, export))
	i := strings.Index(text, `{"note":"`)
	j := i + strings.Index(text[i:], `\n`) + 2 // past the origin line
	tampered := text[:j] + "17" + text[j+2:]
	bad := writeFile(t, t.TempDir(), "bad.jsonl", tampered)
	code, _, errOut = cli(t, data, "ledger", "verify", "--jsonl", bad, "--pubkey", pub)
	if code != exitFailed || !strings.Contains(errOut, "FAILED at checkpoint 17") {
		t.Fatalf("verify of a tampered note: exit %d: %s", code, errOut)
	}
	// The same, read from stdin, good and tampered.
	for input, want := range map[string]int{text: exitOK, tampered: exitFailed} {
		var stdout, stderr bytes.Buffer
		m := &Main{Stdin: strings.NewReader(input), Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }}
		code := m.Run(context.Background(), []string{"ledger", "verify", "--jsonl", "-", "--pubkey", pub})
		if code != want || (want == exitOK) != strings.Contains(stdout.String(), "ok: 3 checkpoint notes") {
			t.Errorf("verify --jsonl - : exit %d, want %d: %s%s", code, want, stdout.String(), stderr.String())
		}
	}
	// The same note changed in the store: the chain holds, the note fails.
	raw, err := sql.Open("sqlite", "file:"+filepath.Join(data, sqlite.DatabaseFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`UPDATE tlog_checkpoints SET note = replace(note, char(10) || '16' || char(10), char(10) || '17' || char(10)) WHERE size = 16`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	code, out, errOut = cli(t, data, "ledger", "verify")
	if code != exitFailed || !strings.Contains(out, "ok: 40 entries") || !strings.Contains(errOut, "FAILED at checkpoint 17") {
		t.Fatalf("verify of a store with a tampered note: exit %d: %s%s", code, out, errOut)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sampleEntry(i int) custody.Entry { return bench.SampleEntry(i%4, i) }

// newWitnessKey returns a witness's private key and its verifier key.
func newWitnessKey(t *testing.T, name string) (ed25519.PrivateKey, string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	vkey, err := note.NewEd25519VerifierKey(name, pub)
	if err != nil {
		t.Fatal(err)
	}
	return priv, vkey
}

// TestLedgerVerifyProgress: a long verify says how far it is on stderr,
// and its outcome stays on stdout.
func TestLedgerVerifyProgress(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	db, err := sqlite.Open(context.Background(), dir, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 40_000
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := next.Add(1); i <= n; i = next.Add(1) {
				if _, err := db.Append(context.Background(), sampleEntry(int(i))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := db.Close(); err != nil { // seals the tail
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	m := &Main{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" },
		ProgressEvery: time.Nanosecond}
	if code := m.Run(context.Background(), []string{"ledger", "verify", "--data", dir}); code != 0 {
		t.Fatalf("verify: exit %d: %s%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{
		"custody ledger verify: 16384 of 40000 entries (40%)",
		"custody ledger verify: 32768 of 40000 entries (81%)",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	if !strings.Contains(stdout.String(), "ok: 40000 entries") || strings.Contains(stdout.String(), "of 40000") {
		t.Errorf("stdout: %s", stdout.String())
	}
	stdout.Reset()
	stderr.Reset()
	export := filepath.Join(t.TempDir(), "ledger.jsonl")
	if code := m.Run(context.Background(), []string{"ledger", "export", "--data", dir, "--out", export}); code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "custody ledger export: 40000 of 40000 entries (100%)") ||
		!regexp.MustCompile(`custody ledger export: [1-9][0-9]* of 40000 entries \([1-9]?[0-9]%\)`).MatchString(stderr.String()) {
		t.Errorf("export's stderr does not show its progress:\n%s", stderr.String())
	}
	if fi, err := os.Stat(export); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the export's mode: %v, %v; want 0600, as the ledger's", fi.Mode().Perm(), err)
	}
	if code, _, errOut := cli(t, dir, "ledger", "verify", "--jsonl", export, "--pubkey", filepath.Join(dir, "signing.pub")); code != 0 {
		t.Errorf("the export does not verify: %s", errOut)
	}
}
