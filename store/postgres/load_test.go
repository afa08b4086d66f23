package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
	"github.com/custody-dev/custody/store/postgres/pgtest"
)

// requestedDigest reads the digest a request was asked for.
func requestedDigest(t *testing.T, url, id string) string {
	t.Helper()
	var d string
	if err := rawPool(t, url).QueryRow(context.Background(), `SELECT requested_digest FROM approvals WHERE id = $1`, id).Scan(&d); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestLoadCopiesLedger copies a ledger with its checkpoints, approvals and
// state into a new store with the same key: the copy verifies, is the
// same ledger (its id), and its chain goes on where the source's ended.
func TestLoadCopiesLedger(t *testing.T) {
	key := filepath.Join(t.TempDir(), "signing.key")
	srcURL := pgtest.URL(t)
	src := open(t, srcURL, Options{KeyFile: key, CheckpointEvery: 3})
	ctx := context.Background()
	appendN(t, src, 3, "t1")
	ap := approvalOf("ap-1", "t1")
	if _, err := src.Commit(ctx, entry("test.kind", "t1"), custody.CreateApproval(ap), custody.PutState("test", "k", json.RawMessage(`{"v":1}`))); err != nil {
		t.Fatal(err)
	}
	edited := ap
	edited.Status, edited.Digest = custody.ApprovalApproved, "d-edited"
	if _, err := src.Commit(ctx, entry("test.kind", "t1"), custody.UpdateApproval(edited, custody.ApprovalPending)); err != nil {
		t.Fatal(err)
	}
	es, err := src.Entries(ctx, custody.Query{})
	if err != nil {
		t.Fatal(err)
	}
	cps, err := src.Checkpoints(ctx)
	if err != nil || len(cps) != 1 {
		t.Fatalf("source checkpoints = %+v, %v; want 1", cps, err)
	}
	as, err := src.Approvals(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	state, err := src.States(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}

	dstURL := pgtest.URL(t)
	dst := open(t, dstURL, Options{KeyFile: key, CheckpointEvery: 3})
	err = dst.Load(ctx, func(l *Loader) error {
		for _, e := range es {
			if err := l.Entry(e); err != nil {
				return err
			}
		}
		for _, cp := range cps {
			if err := l.Checkpoint(cp); err != nil {
				return err
			}
		}
		for _, a := range as {
			if err := l.Approval(a, requestedDigest(t, srcURL, a.ID)); err != nil {
				return err
			}
		}
		for k, doc := range state {
			if err := l.State("test", k, doc); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if dst.LedgerID() != src.LedgerID() {
		t.Fatalf("the copy is ledger %s, the source %s", dst.LedgerID(), src.LedgerID())
	}
	rep, err := dst.Verify(ctx)
	if err != nil || rep.Entries != 5 || rep.Checkpoints != 1 || rep.Ledger != src.LedgerID() {
		t.Fatalf("Verify of the copy = %+v, %v", rep, err)
	}
	if got, err := dst.ApprovalsFor(ctx, "t1", "d-ap-1"); err != nil || len(got) != 1 || got[0].Status != custody.ApprovalApproved {
		t.Fatalf("the copy's request by its requested digest = %+v, %v", got, err)
	}
	if doc, err := dst.State(ctx, "test", "k"); err != nil || string(doc) != `{"v":1}` {
		t.Fatalf("the copy's state = %s, %v", doc, err)
	}
	if n := pgtest.QueryInt(t, dstURL, `SELECT count(*) FROM ledger_head WHERE pending_since IS NOT NULL AND checkpoint_size = 3`); n != 1 {
		t.Fatal("the copy's head does not record the 2 entries no checkpoint covers")
	}
	next := appendN(t, dst, 1, "t1")[0]
	if next.Seq != 6 || next.Prev != es[4].Hash {
		t.Fatalf("the copy's next entry = seq %d after %s, want 6 after %s", next.Seq, next.Prev, es[4].Hash)
	}
	cp, err := dst.LatestCheckpoint(ctx)
	if err != nil || cp.Size != 6 || cp.Ledger != src.LedgerID() {
		t.Fatalf("the copy's checkpoint = %+v, %v; want size 6 of the source's ledger", cp, err)
	}
}

// sealed returns n entries sealed into a chain, as a ledger to load.
func sealed(t *testing.T, n int) []custody.Entry {
	t.Helper()
	es := make([]custody.Entry, n)
	prev := ""
	for i := range es {
		es[i] = entry("test.kind", fmt.Sprint("t", i%3))
		es[i].Seq, es[i].At = int64(i+1), "2026-03-01T12:00:00.000000Z"
		if err := new(ledger.Sealer).Seal(prev, &es[i]); err != nil {
			t.Fatal(err)
		}
		prev = es[i].Hash
	}
	return es
}

// TestLoadManyEntries loads more entries than one insert takes: every one
// arrives in order, Entries returns DefaultLimit of them by default, and
// the chain verifies.
func TestLoadManyEntries(t *testing.T) {
	const n = 2*loadBatch + 7
	db := open(t, pgtest.URL(t), Options{})
	ctx := context.Background()
	es := sealed(t, n)
	err := db.Load(ctx, func(l *Loader) error {
		for _, e := range es {
			if err := l.Entry(e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if h, err := db.Head(ctx); err != nil || h.Seq != n || h.Hash != es[n-1].Hash {
		t.Fatalf("Head = %+v, %v; want the last loaded entry", h, err)
	}
	page, err := db.Entries(ctx, custody.Query{})
	if err != nil || len(page) != DefaultLimit {
		t.Fatalf("Entries with no limit = %d, %v; want %d", len(page), err, DefaultLimit)
	}
	rest, err := db.Entries(ctx, custody.Query{After: 2 * loadBatch, Limit: 100})
	if err != nil || len(rest) != 7 || rest[0].Seq != 2*loadBatch+1 {
		t.Fatalf("Entries after %d = %d, %v; want the last 7", 2*loadBatch, len(rest), err)
	}
	if rep, err := db.Verify(ctx); err != nil || rep.Entries != n || rep.Checkpoints != 0 {
		t.Fatalf("Verify = %+v, %v", rep, err)
	}
}

// TestLoadIntoUsedStoreRefused: a store holding state alone, or an
// approval, is not empty either.
func TestLoadIntoUsedStoreRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		use  func(*DB) error
	}{
		{"State", func(db *DB) error {
			return db.PutState(context.Background(), "test", "k", json.RawMessage(`1`))
		}},
		{"Approval", func(db *DB) error {
			_, err := db.Commit(context.Background(), entry("test.kind", "t1"), custody.CreateApproval(approvalOf("ap-1", "t1")))
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := open(t, pgtest.URL(t), Options{})
			if err := tc.use(db); err != nil {
				t.Fatal(err)
			}
			err := db.Load(context.Background(), func(*Loader) error { return nil })
			wantKind(t, "Load into a used store", err, custody.ECONFLICT)
		})
	}
}
