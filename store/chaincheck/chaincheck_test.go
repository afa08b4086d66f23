package chaincheck_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
	"github.com/custody-dev/custody/store/chaincheck"
	"github.com/custody-dev/custody/store/postgres"
	"github.com/custody-dev/custody/store/postgres/pgtest"
	"github.com/custody-dev/custody/store/sqlite"
)

// held is a real store whose Verify waits until release is closed, so
// that a test sees the check while it runs without timing it.
type held struct {
	*sqlite.DB
	release chan struct{}
}

func (h held) Verify(ctx context.Context) (ledger.Report, error) {
	<-h.release
	return h.DB.Verify(ctx)
}

func open(t *testing.T, dir string) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), dir, sqlite.Options{CheckpointEvery: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func fill(t *testing.T, db *sqlite.DB, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		if _, err := db.Append(context.Background(), custody.Entry{Kind: "k", Trace: "t", Body: fmt.Appendf(nil, `{"i":%d}`, i)}); err != nil {
			t.Fatal(err)
		}
	}
}

func clock() time.Time { return time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) }

func TestCheckOK(t *testing.T) {
	db := open(t, t.TempDir())
	fill(t, db, 10)
	h := held{DB: db, release: make(chan struct{})}
	c := chaincheck.Start(context.Background(), h, clock, slog.New(slog.DiscardHandler))
	if st := c.Status(); st.State != chaincheck.Verifying || st.Started.IsZero() || !st.Finished.IsZero() || st.Err() != nil {
		t.Fatalf("while verifying: %+v", st)
	}
	close(h.release)
	<-c.Done()
	st := c.Status()
	if st.State != chaincheck.OK || st.Size != 10 || st.Finished.IsZero() || st.Err() != nil {
		t.Fatalf("after: %+v", st)
	}
	if _, err := db.Append(context.Background(), custody.Entry{Kind: "k", Trace: "t", Body: []byte(`{}`)}); err != nil {
		t.Fatalf("append after the check held: %v", err)
	}
}

// TestCheckFences: a chain edited under its last checkpoint fails the
// check, naming the seq, and the store refuses every write from then on.
func TestCheckFences(t *testing.T) {
	dir := t.TempDir()
	db := open(t, dir)
	fill(t, db, 10)
	db.Close()
	raw, err := sql.Open("sqlite", "file:"+filepath.Join(dir, sqlite.DatabaseFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`DROP TRIGGER entries_no_update`, `UPDATE entries SET actor = 'mallory' WHERE seq = 3`} {
		if _, err := raw.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	raw.Close()
	db = open(t, dir)
	c := chaincheck.Start(context.Background(), db, clock, slog.New(slog.DiscardHandler))
	<-c.Done()
	st := c.Status()
	if st.State != chaincheck.Failed || st.BadSeq != 3 || !strings.Contains(st.Reason, "seq 3") {
		t.Fatalf("status %+v; want failed at seq 3", st)
	}
	if custody.ErrorKind(st.Err()) != custody.EUNAVAILABLE {
		t.Errorf("Err: %v", st.Err())
	}
	size := db.Size()
	_, err = db.Append(context.Background(), custody.Entry{Kind: "k", Trace: "t", Body: []byte(`{}`)})
	if custody.ErrorKind(err) != custody.EUNAVAILABLE {
		t.Fatalf("append on the fenced store: %v; want unavailable", err)
	}
	if _, err := db.Checkpoint(context.Background()); custody.ErrorKind(err) != custody.EUNAVAILABLE {
		t.Fatalf("checkpoint on the fenced store: %v; want unavailable", err)
	}
	if err := db.Health(context.Background()); err == nil || !strings.Contains(err.Error(), "seq 3") {
		t.Fatalf("Health: %v; want the seq named", err)
	}
	if db.Size() != size {
		t.Fatalf("the ledger grew from %d to %d", size, db.Size())
	}
}

// TestCheckStopped: a check stopped by its context gives no verdict and
// fences nothing.
func TestCheckStopped(t *testing.T) {
	db := open(t, t.TempDir())
	fill(t, db, 3)
	h := held{DB: db, release: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	c := chaincheck.Start(ctx, h, clock, slog.New(slog.DiscardHandler))
	cancel()
	close(h.release)
	<-c.Done()
	if st := c.Status(); st.State != chaincheck.Verifying {
		t.Fatalf("status %+v; want no verdict", st)
	}
	if _, err := db.Append(context.Background(), custody.Entry{Kind: "k", Trace: "t", Body: []byte(`{}`)}); err != nil {
		t.Fatalf("append after a stopped check: %v", err)
	}
}

// TestCheckFencesPostgres is TestCheckFences on the shared store: one
// mechanism for both.
func TestCheckFencesPostgres(t *testing.T) {
	url := pgtest.URL(t)
	key := filepath.Join(t.TempDir(), "signing.key")
	ctx := context.Background()
	db, err := postgres.Open(ctx, url, postgres.Options{KeyFile: key, CheckpointEvery: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := 1; i <= 6; i++ {
		if _, err := db.Append(ctx, custody.Entry{Kind: "k", Trace: "t", Body: fmt.Appendf(nil, `{"i":%d}`, i)}); err != nil {
			t.Fatal(err)
		}
	}
	pgtest.Exec(t, url, `ALTER TABLE entries DISABLE TRIGGER entries_append_only; UPDATE entries SET actor = 'mallory' WHERE seq = 2`)
	c := chaincheck.Start(ctx, db, clock, slog.New(slog.DiscardHandler))
	<-c.Done()
	if st := c.Status(); st.State != chaincheck.Failed || st.BadSeq != 2 {
		t.Fatalf("status %+v; want failed at seq 2", st)
	}
	if _, err := db.Append(ctx, custody.Entry{Kind: "k", Trace: "t", Body: []byte(`{}`)}); custody.ErrorKind(err) != custody.EUNAVAILABLE {
		t.Fatalf("append on the fenced store: %v; want unavailable", err)
	}
	if n := pgtest.QueryInt(t, url, `SELECT count(*) FROM entries`); n != 6 {
		t.Fatalf("%d entries, want 6: the fenced store wrote", n)
	}
}
