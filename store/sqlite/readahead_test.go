package sqlite

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/custody-dev/custody"
)

// walk is walkAhead the simple way, all from one ordered query in one
// read transaction: the path walkAhead is held to.
func (db *DB) walk(ctx context.Context, entry func(*custody.Entry) error, checkpoint func(custody.Checkpoint) error) error {
	tx, err := db.rdb.BeginTx(ctx, nil)
	if err != nil {
		return unavailable("read ledger", err)
	}
	defer tx.Rollback()
	cps, err := readCheckpoints(ctx, tx)
	if err != nil {
		return unavailable("read checkpoints", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+entryColumns+` FROM entries ORDER BY seq`)
	if err != nil {
		return unavailable("read ledger", err)
	}
	defer rows.Close()
	var e custody.Entry
	next := func() (*custody.Entry, bool) {
		if !rows.Next() {
			return nil, false
		}
		e, err = scanEntry(rows)
		return &e, err == nil
	}
	stopped := func() error {
		if err != nil {
			return err
		}
		return rows.Err()
	}
	return feed(cps, next, stopped, entry, checkpoint)
}

// walked is what a walk handed its callbacks, one line each.
func walked(t *testing.T, walk func(entry func(*custody.Entry) error, checkpoint func(custody.Checkpoint) error) error) []string {
	t.Helper()
	var out []string
	err := walk(func(e *custody.Entry) error {
		out = append(out, fmt.Sprintf("e %d %s %s %s %s %s %s %v %s %s", e.Seq, e.At, e.Kind, e.Trace, e.Actor, e.Prev, e.Hash, e.Refs, e.BodySHA256, e.Body))
		return nil
	}, func(cp custody.Checkpoint) error {
		out = append(out, fmt.Sprintf("c %d %s", cp.Size, cp.Head))
		return nil
	})
	if err != nil {
		t.Fatalf("walk: %v", err)
	}
	return out
}

// TestReadAheadMatchesOneQuery holds the parallel read that verify and
// export use to one ordered query: the same entries, linked the same
// way, with the checkpoints at the same places, for chunk sizes that do
// and do not divide the ledger.
func TestReadAheadMatchesOneQuery(t *testing.T) {
	ctx := context.Background()
	// No checkpoint by time: one written between two walks would make
	// them differ.
	db := openDir(t, t.TempDir(), Options{CheckpointEvery: 64, CheckpointInterval: time.Hour})
	for i := range 1000 {
		var refs map[string]string
		if i%3 == 0 {
			refs = map[string]string{"i": fmt.Sprint(i), "k": "\"quoted\" é"}
		}
		mustAppend(t, db, entry(fmt.Sprint("k", i%5), fmt.Sprint("t", i%7), refs, i))
	}
	want := walked(t, func(e func(*custody.Entry) error, c func(custody.Checkpoint) error) error { return db.walk(ctx, e, c) })
	if len(want) < 1000+15 {
		t.Fatalf("the walk gave %d lines", len(want))
	}
	for _, chunk := range []int64{1, 7, 64, 999, 1000, 1001, readAheadChunk} {
		got := walked(t, func(e func(*custody.Entry) error, c func(custody.Checkpoint) error) error {
			return db.walkAhead(ctx, chunk, 2, e, c)
		})
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("chunk %d: the parallel read differs from the ordered query at %s", chunk, firstDiff(got, want))
		}
	}
	empty := openDir(t, t.TempDir(), Options{})
	if got := walked(t, func(e func(*custody.Entry) error, c func(custody.Checkpoint) error) error {
		return empty.walkAhead(ctx, 7, 2, e, c)
	}); len(got) != 0 {
		t.Errorf("an empty ledger walked %v", got)
	}
}

// TestReadAheadStopsEarly stops a parallel walk at an entry: the error is
// returned and every reader ends (the race detector and the test's end
// would catch a reader left behind).
func TestReadAheadStopsEarly(t *testing.T) {
	db := openDir(t, t.TempDir(), Options{})
	for i := range 300 {
		mustAppend(t, db, entry("k", "t", nil, i))
	}
	stop := errors.New("stop here")
	var seen int64
	err := db.walkAhead(context.Background(), 10, 2, func(e *custody.Entry) error {
		seen = e.Seq
		if e.Seq == 57 {
			return stop
		}
		return nil
	}, func(custody.Checkpoint) error { return nil })
	if seen != 57 || err == nil || !strings.Contains(err.Error(), "stop here") {
		t.Fatalf("stopped at %d with %v", seen, err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("close after an early stop: %v", err)
	}
}

// firstDiff describes where two walks first differ.
func firstDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("line %d: %q, want %q", i, got[i], want[i])
		}
	}
	return fmt.Sprintf("the end: %d lines, want %d", len(got), len(want))
}

// TestReadAheadConcurrentWalks runs several parallel walks at once, with
// more readers than CPUs and chunks smaller than a page, while the store
// serves other reads: each finishes with every entry (a reader that
// holds a connection while the chunk before it waits for one would hang
// here).
func TestReadAheadConcurrentWalks(t *testing.T) {
	ctx := context.Background()
	db := openDir(t, t.TempDir(), Options{CheckpointInterval: time.Hour})
	for i := range 400 {
		mustAppend(t, db, entry("k", "t", nil, i))
	}
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			n := 0
			err := db.walkAhead(ctx, 3, 1+w%5, func(*custody.Entry) error { n++; return nil },
				func(custody.Checkpoint) error { return nil })
			if err != nil || n != 400 {
				t.Errorf("walk %d: %d entries, %v", w, n, err)
			}
		})
		wg.Go(func() {
			if _, err := db.Entries(ctx, custody.Query{Limit: 50}); err != nil {
				t.Errorf("a read beside the walks: %v", err)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the walks did not finish")
	}
}
