package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/custody-dev/custody"
)

// openTest opens a store in a new temporary directory, closed at the end of
// the test.
func openTest(t testing.TB, opts Options) *DB {
	t.Helper()
	return openDir(t, t.TempDir(), opts)
}

func openDir(t testing.TB, dir string, opts Options) *DB {
	t.Helper()
	db, err := Open(context.Background(), dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// entry returns a valid entry with a small body.
func entry(kind, trace string, refs map[string]string, i int) custody.Entry {
	return custody.Entry{
		Kind: kind, Trace: trace, Actor: "tester", Refs: refs,
		Body: []byte(fmt.Sprintf(`{"i": %d, "note": "é\u00e9"}`, i)),
	}
}

func mustAppend(t testing.TB, db *DB, e custody.Entry) custody.Entry {
	t.Helper()
	got, err := db.Append(context.Background(), e)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return got
}

// rawExec runs statements on the database file directly, as someone with
// write access to the data directory could.
func rawExec(t testing.TB, dir string, stmts ...string) {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+filepath.Join(dir, DatabaseFile)+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, s := range stmts {
		if _, err := raw.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// holdWriter occupies the writer with an operation until the returned
// release function is called, so that what is queued meanwhile commits as
// one batch.
func holdWriter(t testing.TB, db *DB) (release func()) {
	t.Helper()
	started, gate := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		db.do(context.Background(), &request{what: "hold", op: func(context.Context, *sql.Tx) error {
			close(started)
			<-gate
			return nil
		}})
	}()
	<-started
	return func() { close(gate); wg.Wait() }
}

// waitQueued waits until n requests wait for the writer.
func waitQueued(t testing.TB, db *DB, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(db.reqs) < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d requests queued", len(db.reqs), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func kindOf(err error) string { return custody.ErrorKind(err) }

func runtimeYield() { time.Sleep(100 * time.Microsecond) }

func rawExecErr(dir, stmt string) error {
	raw, err := sql.Open("sqlite", "file:"+filepath.Join(dir, DatabaseFile)+"?_busy_timeout=5000")
	if err != nil {
		return err
	}
	defer raw.Close()
	_, err = raw.Exec(stmt)
	return err
}

func openRaw(t testing.TB, dir string) *sql.DB {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+filepath.Join(dir, DatabaseFile)+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return raw
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
