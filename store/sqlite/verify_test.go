package sqlite

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/custody-dev/custody/ledger"
)

// dropGuards removes the append-only triggers, as someone tampering with
// the file would.
const dropGuards = `DROP TRIGGER entries_no_update; DROP TRIGGER entries_no_delete`

func TestVerifyDetectsTampering(t *testing.T) {
	tests := []struct {
		name    string
		sql     string
		seq     int64
		because string // a word of the reason
	}{
		{"BodyByte", `UPDATE entries SET body = CAST(replace(CAST(body AS TEXT), '"i": 5', '"i": 6') AS BLOB) WHERE seq = 5`, 5, "body_sha256"},
		{"BodyAndDigest", `UPDATE entries SET body = CAST('{"i":6}' AS BLOB),
			body_sha256 = X'` + sha256Hex(`{"i":6}`) + `' WHERE seq = 5`, 5, "hash"},
		{"Kind", `UPDATE entries SET kind = 'other' WHERE seq = 3`, 3, "hash"},
		{"Refs", `UPDATE entries SET refs = '{"i":"99"}' WHERE seq = 2`, 2, "hash"},
		{"RefsNotJSON", `UPDATE entries SET refs = 'nope' WHERE seq = 2`, 2, "refs"},
		{"BodyNotBytes", `UPDATE entries SET body = 5.5 WHERE seq = 5`, 5, "stored body is a float64"},
		{"HashText", `UPDATE entries SET hash = 'zz' WHERE seq = 6`, 6, "hash"},
		{"KindNumber", `UPDATE entries SET kind = 7 WHERE seq = 3`, 3, "hash"},
		{"DeleteRow", `DELETE FROM entries WHERE seq = 4`, 4, "missing"},
		{"TruncateBelowCheckpoint", `DELETE FROM entries WHERE seq > 6`, 7, "cut off"},
		{"CheckpointHead", `UPDATE checkpoints SET head = (SELECT hash FROM entries WHERE seq = 7) WHERE size = 8`, 8, "checkpoint"},
		{"CheckpointSig", `UPDATE checkpoints SET sig = (SELECT sig FROM checkpoints WHERE size = 4) WHERE size = 8`, 8, "signature"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			db := openDir(t, dir, Options{CheckpointEvery: 4})
			for i := 1; i <= 10; i++ {
				mustAppend(t, db, entry("k", "t", map[string]string{"i": fmt.Sprint(i)}, i))
			}
			if _, err := db.Verify(context.Background()); err != nil {
				t.Fatalf("Verify before tampering: %v", err)
			}
			db.Close() // writes the checkpoint at 10
			rawExec(t, dir, dropGuards, tt.sql)
			// What Verify finds, not what Open refuses (see
			// TestOpenRefusesStoreGoneBackwards).
			os.Remove(filepath.Join(dir, recordFile))

			db = openDir(t, dir, Options{ReadOnly: true})
			_, err := db.Verify(context.Background())
			var ve *ledger.VerifyError
			if !errors.As(err, &ve) {
				t.Fatalf("Verify after tampering: err = %v, want a *ledger.VerifyError", err)
			}
			if ve.Seq != tt.seq || !strings.Contains(ve.Reason, tt.because) {
				t.Fatalf("Verify: %v; want seq %d and a reason naming %q", ve, tt.seq, tt.because)
			}
		})
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestAppendOnlyGuard(t *testing.T) {
	dir := t.TempDir()
	db := openDir(t, dir, Options{})
	mustAppend(t, db, entry("k", "t", nil, 1))
	raw := func(stmt string) error { return rawExecErr(dir, stmt) }
	if err := raw(`UPDATE entries SET kind = 'x'`); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Errorf("UPDATE of an entry: err = %v, want append-only", err)
	}
	if err := raw(`DELETE FROM entries`); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Errorf("DELETE of an entry: err = %v, want append-only", err)
	}
}

func TestExportJSONL(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{CheckpointEvery: 3})
	for i := range 7 {
		e := entry("k", "t", map[string]string{"n": fmt.Sprint(i)}, i)
		if i == 2 {
			e.Body = []byte("{\n  \"pretty\": true\n}")
		}
		mustAppend(t, db, e)
	}
	if _, err := db.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := db.ExportJSONL(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "\n"); n != 7+3+3 {
		t.Errorf("%d lines, want 7 entries and 3 checkpoints, each with its note", n)
	}
	r, err := ledger.VerifyJSONL(bytes.NewReader(buf.Bytes()), db.PublicKey())
	if err != nil {
		t.Fatalf("VerifyJSONL: %v", err)
	}
	if r.Entries != 7 || r.Checkpoints != 3 || !r.Signed {
		t.Fatalf("report %+v", r)
	}
	local, err := db.Verify(ctx)
	if err != nil || local != r {
		t.Fatalf("Verify = %+v, %v; want %+v", local, err, r)
	}
}

// crashDirEnv tells the test binary, re-executed by TestCrashConsistency,
// to run TestCrashChild in the given directory.
const crashDirEnv = "CUSTODY_SQLITE_CRASH_DIR"

// TestCrashChild appends from many goroutines and prints every
// acknowledged append as "ack SEQ HASH" until it is killed. It only runs
// as the child process of TestCrashConsistency.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("runs only as the child process of TestCrashConsistency")
	}
	db, err := Open(context.Background(), dir, Options{CheckpointEvery: 64})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := 0; ; i++ {
				e, err := db.Append(context.Background(), entry("k", fmt.Sprint("t", w), map[string]string{"w": fmt.Sprint(w)}, i))
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(3)
				}
				mu.Lock()
				fmt.Fprintf(os.Stdout, "ack %d %s\n", e.Seq, e.Hash) // one write: atomic on a pipe
				mu.Unlock()
			}
		})
	}
	time.Sleep(time.Minute) // the parent kills this process long before
	os.Exit(4)
}

func TestCrashConsistency(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := t.TempDir()
	for round := range 3 {
		acked := crashOnce(t, dir, 300+300*round)
		db := openDir(t, dir, Options{})
		checkAcked(t, db, acked)
		t.Logf("round %d: %d acknowledged appends survived SIGKILL; ledger holds %d", round, len(acked), db.Size())
		db.Close()
	}
}

// crashOnce runs the child until it acknowledged at least n more appends,
// kills it with SIGKILL and returns every acknowledgement it printed.
func crashOnce(t *testing.T, dir string, n int) map[int64]string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[int64]string{}
	sc := bufio.NewScanner(out)
	deadline := time.Now().Add(30 * time.Second)
	for sc.Scan() {
		if seq, hash, ok := parseAck(sc.Text()); ok {
			acked[seq] = hash
		}
		if len(acked) == n || time.Now().After(deadline) {
			cmd.Process.Kill() // SIGKILL, mid-stream
		}
	}
	cmd.Wait()
	if len(acked) < n {
		t.Fatalf("child acknowledged %d appends, want %d; stderr: %s", len(acked), n, stderr.String())
	}
	return acked
}

func parseAck(line string) (int64, string, bool) {
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "ack" || len(f[2]) != 64 {
		return 0, "", false
	}
	seq, err := strconv.ParseInt(f[1], 10, 64)
	return seq, f[2], err == nil
}
