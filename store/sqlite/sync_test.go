package sqlite

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/bench"
	"github.com/custody-dev/custody/internal/lockedbuf"
)

// heldSync is an fsync a test can hold back: while held, each fsync
// reports on entered and waits for release.
type heldSync struct {
	held    atomic.Bool
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

// let releases the held fsyncs; later ones run at once.
func (h *heldSync) let() {
	h.held.Store(false)
	h.once.Do(func() { close(h.release) })
}

func newHeldSync() *heldSync {
	return &heldSync{entered: make(chan struct{}, 64), release: make(chan struct{})}
}

func (h *heldSync) fsync(f *os.File) error {
	if h.held.Load() {
		h.entered <- struct{}{}
		<-h.release
	}
	return fdatasync(f)
}

// committedRows counts the entries a reader of the database sees.
func committedRows(t *testing.T, db *DB) int64 {
	t.Helper()
	var n int64
	if err := db.rdb.QueryRow(`SELECT count(*) FROM entries`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestAppendAnsweredOnceDurable(t *testing.T) {
	ctx := context.Background()
	h := newHeldSync()
	db := openTest(t, Options{fsync: h.fsync})
	t.Cleanup(h.let) // before Close, should the test stop early
	if _, err := db.Append(ctx, bench.SampleEntry(0, 0)); err != nil {
		t.Fatal(err)
	}

	h.held.Store(true)
	answered := make(chan error, 2)
	appendAsync := func(i int) {
		go func() {
			_, err := db.Append(ctx, bench.SampleEntry(0, i))
			answered <- err
		}()
	}
	appendAsync(1)
	<-h.entered // the syncer holds the fsync of the second entry's batch
	if n := committedRows(t, db); n != 2 {
		t.Fatalf("%d entries committed, want 2: the second is committed before its fsync", n)
	}
	select {
	case err := <-answered:
		t.Fatalf("Append returned (err %v) before its entry was durable", err)
	case <-time.After(50 * time.Millisecond):
	}
	if got := db.Size(); got != 1 {
		t.Fatalf("readers see a head of %d before the fsync, want 1", got)
	}

	// While the fsync is held the writer goes on: the next batch commits.
	appendAsync(2)
	waitFor(t, func() bool { return committedRows(t, db) == 3 }, "the third entry to commit while the second's fsync runs")
	select {
	case err := <-answered:
		t.Fatalf("Append returned (err %v) before its entry was durable", err)
	default:
	}

	h.let()
	for range 2 {
		if err := <-answered; err != nil {
			t.Fatal(err)
		}
	}
	if got := db.Size(); got != 3 {
		t.Fatalf("head %d after the fsync, want 3", got)
	}
	if _, err := db.Verify(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestSyncFailureFailsClosed(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var failing atomic.Bool
	injected := errors.New("input/output error (injected)")
	var logged lockedbuf.Buffer
	opts := Options{Logger: slog.New(slog.NewTextHandler(&logged, nil)), fsync: func(f *os.File) error {
		if failing.Load() {
			return injected
		}
		return fdatasync(f)
	}}
	db, err := Open(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Append(ctx, bench.SampleEntry(0, 0)); err != nil {
		t.Fatal(err)
	}

	failing.Store(true)
	_, err = db.Append(ctx, bench.SampleEntry(0, 1))
	if kindOf(err) != custody.EUNAVAILABLE || !errors.Is(err, injected) {
		t.Fatalf("append whose fsync failed: err = %v, want EUNAVAILABLE wrapping the fsync's error", err)
	}
	if got := db.Size(); got != 1 {
		t.Fatalf("readers see a head of %d after the failed fsync, want 1", got)
	}
	if _, err := db.Head(ctx); kindOf(err) != custody.EUNAVAILABLE {
		t.Fatalf("Head after a failed fsync: err = %v, want EUNAVAILABLE: the head on disk is unknown", err)
	}

	// Once an fsync failed no later write is trusted, even if the disk
	// answers again: the store refuses until it is opened again.
	failing.Store(false)
	if _, err := db.Append(ctx, bench.SampleEntry(0, 2)); kindOf(err) != custody.EUNAVAILABLE || !strings.Contains(err.Error(), "opened again") {
		t.Fatalf("append after a failed fsync: err = %v, want EUNAVAILABLE saying the store must be opened again", err)
	}
	if n := committedRows(t, db); n > 2 {
		t.Fatalf("%d entries committed: the refused append was written", n)
	}
	if err := db.PutState(ctx, "ns", "k", []byte(`1`)); kindOf(err) != custody.EUNAVAILABLE {
		t.Fatalf("state write after a failed fsync: err = %v, want EUNAVAILABLE", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logged.String(), "the store failed closed"); n != 1 {
		t.Errorf("the failure was logged %d times, want once:\n%s", n, logged.String())
	}

	// Opened again, recovery settles what the log holds: the chain is
	// whole and appends go on after it.
	db = openDir(t, dir, Options{})
	if _, err := db.Verify(ctx); err != nil {
		t.Fatal(err)
	}
	before := db.Size()
	if before < 1 || before > 2 {
		t.Fatalf("reopened ledger holds %d entries, want the first and perhaps the one whose fsync failed", before)
	}
	if e, err := db.Append(ctx, bench.SampleEntry(0, 3)); err != nil || e.Seq != before+1 {
		t.Fatalf("append after reopening: seq %d, err %v; want seq %d", e.Seq, err, before+1)
	}
}

// waitFor polls cond until it holds, failing the test after ten seconds.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Heads reach publish out of order when another process's append is found
// while this process's last batch still syncs: readers never see the head
// go back.
func TestPublishKeepsTheLaterHead(t *testing.T) {
	db := openTest(t, Options{})
	db.publish(custody.Receipt{Seq: 5, Hash: "h5"})
	db.publish(custody.Receipt{Seq: 3, Hash: "h3"})
	if got, _ := db.Head(context.Background()); got.Seq != 5 || got.Hash != "h5" {
		t.Fatalf("head %+v after publishing 5 then 3, want 5", got)
	}
	db.publish(custody.Receipt{Seq: 6, Hash: "h6"})
	if got := db.Size(); got != 6 {
		t.Fatalf("size %d after publishing 6, want 6", got)
	}
}
