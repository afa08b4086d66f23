package sqlite

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"sync"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
	"github.com/custody-dev/custody/tlog"
)

// appendMany appends n entries from 16 goroutines, so that they share
// commits, and returns once all are durable.
func appendMany(t testing.TB, db *DB, n int) {
	t.Helper()
	var wg sync.WaitGroup
	work := make(chan int, n)
	for i := range n {
		work <- i
	}
	close(work)
	for range 16 {
		wg.Go(func() {
			for i := range work {
				if _, err := db.Append(context.Background(), entry("k", "t", nil, i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
}

func notes(t testing.TB, db *DB) []Note {
	t.Helper()
	ns, err := db.Notes(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

func TestTreeReceiptsForEveryEntry(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{CheckpointEvery: 256})
	appendMany(t, db, 2500)
	if _, err := db.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	ns := notes(t, db)
	if len(ns) < 5 || ns[len(ns)-1].Size != 2500 {
		t.Fatalf("%d notes, the last of size %d: want one every 256 entries and one of 2500", len(ns), ns[len(ns)-1].Size)
	}
	for _, n := range ns {
		for seq := uint64(1); seq <= n.Size; seq++ {
			r, err := db.Receipt(ctx, seq, n.Size)
			if err != nil {
				t.Fatalf("receipt of %d in %d: %v", seq, n.Size, err)
			}
			if _, err := r.Verify(db.PublicKey(), db.Origin()); err != nil {
				t.Fatalf("entry %d in checkpoint %d: %v", seq, n.Size, err)
			}
		}
	}
	for _, a := range ns {
		for _, b := range ns {
			if a.Size > b.Size {
				continue
			}
			c, err := db.Consistency(ctx, a.Size, b.Size)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Verify(db.PublicKey(), db.Origin()); err != nil {
				t.Fatalf("checkpoints %d and %d: %v", a.Size, b.Size, err)
			}
		}
	}
}

func TestTreeNotesMatchCheckpoints(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{CheckpointEvery: 100})
	appendMany(t, db, 450)
	if _, err := db.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	cps, err := db.Checkpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ns := notes(t, db)
	if len(ns) != len(cps) {
		t.Fatalf("%d notes for %d checkpoints", len(ns), len(cps))
	}
	for i, cp := range cps {
		// The checkpoints of before stay verifiable as they were.
		if err := ledger.VerifyCheckpoint(db.PublicKey(), cp); err != nil {
			t.Fatal(err)
		}
		c, _, err := tlog.Open(ns[i].Signed, db.Origin(), db.PublicKey())
		if err != nil {
			t.Fatal(err)
		}
		if int64(c.Size) != cp.Size || c.Head != cp.Head {
			t.Fatalf("note %d/%s for checkpoint %d/%s", c.Size, c.Head, cp.Size, cp.Head)
		}
	}
}

func TestTreeRebuiltWhenMissing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := openDir(t, dir, Options{CheckpointEvery: 64})
	appendMany(t, db, 300)
	first, err := db.NoteAt(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	rawExec(t, dir, `DELETE FROM tlog_nodes WHERE pos > 100`)
	db = openDir(t, dir, Options{CheckpointEvery: 64})
	appendMany(t, db, 200)
	if _, err := db.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := db.Consistency(ctx, first.Size, 500)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Verify(db.PublicKey(), ""); err != nil {
		t.Fatalf("the rebuilt tree is not consistent with the first: %v", err)
	}
	r, err := db.Receipt(ctx, 7, first.Size)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Verify(db.PublicKey(), db.Origin()); err != nil {
		t.Fatal(err)
	}
}

func TestTreeTamperedEntryFailsProof(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := openDir(t, dir, Options{CheckpointEvery: 64})
	appendMany(t, db, 200)
	if _, err := db.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	honest, err := db.NoteAt(ctx, 200)
	if err != nil {
		t.Fatal(err)
	}
	r, err := db.Receipt(ctx, 42, 200)
	if err != nil {
		t.Fatal(err)
	}
	forged := r
	forged.Hash = "0" + r.Hash[1:]
	if forged.Hash == r.Hash {
		forged.Hash = "1" + r.Hash[1:]
	}
	if _, err := forged.Verify(db.PublicKey(), db.Origin()); err == nil {
		t.Fatal("a receipt for a tampered entry hash verified")
	}
	db.Close()

	// Someone with the file rewrites entry 42 and drops the checkpoints
	// and the tree so that they are made again over it: the data
	// directory's record of its last checkpoint refuses the store. (A
	// tree rebuilt over a tampered entry failing the honest checkpoint is
	// package tlog's TestTamperedEntryFailsInclusion.)
	rawExec(t, dir, `DROP TRIGGER entries_no_update`,
		`UPDATE entries SET hash = unhex('`+forged.Hash+`') WHERE seq = 42`,
		`DELETE FROM tlog_nodes`, `DELETE FROM tlog_checkpoints`, `DELETE FROM checkpoints`)
	if db, err := Open(context.Background(), dir, Options{CheckpointEvery: 64}); err == nil {
		db.Close()
		t.Fatal("a store whose checkpoints and tree were dropped over a tampered entry opened")
	}
	_ = honest
}

func TestTreeRefusals(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{CheckpointEvery: 10})
	if _, err := db.Receipt(ctx, 1, 0); kindOf(err) != custody.ENOTFOUND {
		t.Fatalf("receipt before any checkpoint: %v, want not_found", err)
	}
	appendMany(t, db, 25)
	if _, err := db.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, db, entry("k", "t", nil, 26)) // not due for a checkpoint
	cases := map[string]struct {
		err  error
		kind string
	}{
		"ErrSeqZero":       {second(db.Receipt(ctx, 0, 0)), custody.EINVALID},
		"ErrNotCovered":    {second(db.Receipt(ctx, 26, 0)), custody.ENOTFOUND},
		"ErrNoSuchSize":    {second(db.Receipt(ctx, 1, 27)), custody.ENOTFOUND},
		"ErrFromPastTo":    {second(db.Consistency(ctx, 20, 10)), custody.EINVALID},
		"ErrToPastLatest":  {second(db.Consistency(ctx, 10, 26)), custody.ENOTFOUND},
		"ErrFromNoCheckpt": {second(db.Consistency(ctx, 0, 20)), custody.ENOTFOUND},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if kindOf(tc.err) != tc.kind {
				t.Fatalf("err = %v, want %s", tc.err, tc.kind)
			}
		})
	}
}

func second[T any](_ T, err error) error { return err }

func TestCosignaturesStored(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{CheckpointEvery: 10})
	appendMany(t, db, 20)
	if _, err := db.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := db.LastCosigned(ctx, "w"); err != nil || n != 0 {
		t.Fatalf("LastCosigned before any: %d, %v", n, err)
	}
	for _, size := range []uint64{10, 20} {
		if err := db.AddCosignature(ctx, size, "w", "— w AAAA\n"); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.AddCosignature(ctx, 20, "v", "— v BBBB\n"); err != nil {
		t.Fatal(err)
	}
	if n, err := db.LastCosigned(ctx, "w"); err != nil || n != 20 {
		t.Fatalf("LastCosigned = %d, %v, want 20", n, err)
	}
	ns := notes(t, db)
	last := ns[len(ns)-1]
	if last.Size != 20 || string(last.Cosignatures) != "— v BBBB\n— w AAAA\n" || !bytes.HasSuffix(last.Cosigned(), last.Cosignatures) {
		t.Fatalf("note %d carries %q", last.Size, last.Cosignatures)
	}
}

// TestTreeTwoWriters has two stores on one directory append in turns, as
// two processes would: each writer's memory of the tree goes stale when
// the other appends, and every note must still state the tree over the
// entries.
func TestTreeTwoWriters(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := openDir(t, dir, Options{CheckpointEvery: 7})
	b := openDir(t, dir, Options{CheckpointEvery: 5})
	for i := range 60 {
		db := a
		if i/9%2 == 1 {
			db = b
		}
		mustAppend(t, db, entry("k", "t", nil, i))
	}
	if _, err := b.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := a.ExportJSONL(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	c := tlog.NewNoteChecker([]ed25519.PublicKey{a.PublicKey()}, nil, 0)
	d := ledger.NewDecoder(&buf)
	for {
		l, err := d.Next()
		if err != nil {
			break
		}
		if l.Entry != nil {
			err = c.Entry(l.Entry.Hash)
		} else if l.Note != nil {
			err = c.Note(l.Note)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if c.Notes() < 8 {
		t.Fatalf("%d notes checked, want one every few entries", c.Notes())
	}
}
