package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
	"github.com/custody-dev/custody/store/postgres/pgtest"
)

// instances opens n instances on one new schema with one key file.
func instances(t *testing.T, n int, opts Options) ([]*DB, string) {
	t.Helper()
	url := pgtest.URL(t)
	opts.KeyFile = filepath.Join(t.TempDir(), "signing.key")
	dbs := make([]*DB, n)
	for i := range dbs {
		dbs[i] = open(t, url, opts)
	}
	return dbs, url
}

// TestInstancesNeverFork commits from three instances at once, every
// entry with changes: the stored chain links each entry to the one before
// it with no seq twice, every acknowledged entry is on it as acknowledged,
// and each instance's own acknowledgements come in seq order.
func TestInstancesNeverFork(t *testing.T) {
	dbs, _ := instances(t, 3, Options{CheckpointEvery: 25})
	ctx := context.Background()
	const perWriter = 20
	acked := make([][]custody.Entry, len(dbs)*3)
	var wg sync.WaitGroup
	for i, db := range dbs {
		for g := range 3 {
			w := i*3 + g
			wg.Go(func() {
				for k := range perWriter {
					key := fmt.Sprintf("w%d-%d", w, k)
					e, err := db.Commit(ctx, entry("test.kind", fmt.Sprint("w", w)),
						custody.PutState("test", key, json.RawMessage(`1`)), custody.IncrState("count", "all", 1, 0))
					if err != nil {
						t.Error(err)
						return
					}
					acked[w] = append(acked[w], e)
				}
			})
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	total := len(acked) * perWriter
	es, err := dbs[2].Entries(ctx, custody.Query{Limit: total + 1})
	if err != nil || len(es) != total {
		t.Fatalf("Entries = %d, %v; want %d", len(es), err, total)
	}
	prev := ledger.GenesisPrev()
	for i, e := range es {
		if e.Seq != int64(i+1) || e.Prev != prev {
			t.Fatalf("entry %d: seq %d, prev %s; want seq %d after %s", i, e.Seq, e.Prev, i+1, prev)
		}
		prev = e.Hash
	}
	for w, mine := range acked {
		for k, e := range mine {
			if es[e.Seq-1].Hash != e.Hash || es[e.Seq-1].Trace != e.Trace {
				t.Fatalf("writer %d's entry %d is not on the chain as acknowledged", w, e.Seq)
			}
			if k > 0 && e.Seq <= mine[k-1].Seq {
				t.Fatalf("writer %d: seq %d acknowledged after %d", w, e.Seq, mine[k-1].Seq)
			}
		}
	}
	if doc, err := dbs[0].State(ctx, "count", "all"); err != nil || string(doc) != fmt.Sprint(total) {
		t.Fatalf("the shared counter = %s, %v; want %d", doc, err, total)
	}
	// Every group that leaves CheckpointEvery entries uncovered signs a
	// checkpoint, however the appends fell into groups.
	if rep, err := dbs[1].Verify(ctx); err != nil || rep.Entries != int64(total) || rep.Checkpoints == 0 || rep.Unsealed() >= 25 {
		t.Fatalf("Verify = %+v, %v; want %d entries, fewer than 25 of them uncovered", rep, err, total)
	}
}

// TestBudgetAcrossInstances: a ceiling holds across instances spending
// one budget at once; exactly the ceiling's worth of commits succeed.
func TestBudgetAcrossInstances(t *testing.T) {
	dbs, _ := instances(t, 3, Options{})
	ctx := context.Background()
	const limit, tries = 30, 10
	var mu sync.Mutex
	ok, denied := 0, 0
	var wg sync.WaitGroup
	for _, db := range dbs {
		for range 4 {
			wg.Go(func() {
				for range tries {
					_, err := db.Commit(ctx, entry("test.kind", "t1"), custody.IncrState("budget", "t1", 1, limit))
					mu.Lock()
					switch custody.ErrorKind(err) {
					case "":
						ok++
					case custody.EDENIED:
						denied++
					default:
						t.Error(err)
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if ok != limit || denied != len(dbs)*4*tries-limit {
		t.Fatalf("%d commits succeeded and %d were denied, want %d and %d", ok, denied, limit, len(dbs)*4*tries-limit)
	}
	if doc, err := dbs[0].State(ctx, "budget", "t1"); err != nil || string(doc) != fmt.Sprint(limit) {
		t.Fatalf("budget = %s, %v; want %d", doc, err, limit)
	}
	if h, err := dbs[1].Head(ctx); err != nil || h.Seq != limit {
		t.Fatalf("Head = %+v, %v; want %d entries", h, err, limit)
	}
}

// TestConsumeOnceAcrossInstances: of instances racing to use one
// approval, exactly one does.
func TestConsumeOnceAcrossInstances(t *testing.T) {
	dbs, _ := instances(t, 3, Options{})
	ctx := context.Background()
	ap := approvalOf("ap-1", "t1")
	ap.Status = custody.ApprovalApproved
	if _, err := dbs[0].Commit(ctx, entry("test.kind", "t1"), custody.CreateApproval(ap)); err != nil {
		t.Fatal(err)
	}
	const per = 8
	errs := make([]error, len(dbs)*per)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range errs {
		db := dbs[i%len(dbs)]
		wg.Go(func() {
			<-start
			_, errs[i] = db.Commit(ctx, entry("test.kind", "t1"), custody.ConsumeApproval("ap-1"))
		})
	}
	close(start)
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch custody.ErrorKind(err) {
		case "":
			won++
		case custody.ECONFLICT:
		default:
			t.Fatalf("use %d: %v", i, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d uses of one approval succeeded, want 1", won)
	}
	if a, err := dbs[2].Approval(ctx, "ap-1"); err != nil || a.Status != custody.ApprovalConsumed || a.ConsumedSeq != 2 {
		t.Fatalf("Approval = %+v, %v; want consumed by seq 2", a, err)
	}
}

// TestCheckpointEvery: appended one at a time, the entries get a
// checkpoint every CheckpointEvery, signed with the ledger's id.
func TestCheckpointEvery(t *testing.T) {
	db := open(t, pgtest.URL(t), Options{CheckpointEvery: 4})
	appendN(t, db, 10, "t1")
	cps, err := db.Checkpoints(context.Background())
	if err != nil || len(cps) != 2 || cps[0].Size != 4 || cps[1].Size != 8 {
		t.Fatalf("Checkpoints = %+v, %v; want sizes 4 and 8", cps, err)
	}
	for _, cp := range cps {
		if cp.Ledger != db.LedgerID() || ledger.VerifyCheckpoint(db.PublicKey(), cp) != nil {
			t.Fatalf("checkpoint %d does not verify as the ledger's", cp.Size)
		}
	}
	if cp, err := db.LatestCheckpoint(context.Background()); err != nil || cp != cps[1] {
		t.Fatalf("LatestCheckpoint = %+v, %v; want the one at 8", cp, err)
	}
}

// TestCheckpointOnTick: once entries have waited CheckpointInterval by
// the store's clock, the writer's tick signs a checkpoint without an
// append. The clock is the test's: the tick only looks at it.
func TestCheckpointOnTick(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	url := pgtest.URL(t)
	db := open(t, url, Options{Now: clock, CheckpointInterval: 20 * time.Millisecond})
	appendN(t, db, 2, "t1")
	if n := pgtest.QueryInt(t, url, `SELECT count(*) FROM ledger_head WHERE pending_since IS NOT NULL`); n != 1 {
		t.Fatal("the head does not record that entries wait for a checkpoint")
	}
	if _, err := db.LatestCheckpoint(context.Background()); custody.ErrorKind(err) != custody.ENOTFOUND {
		t.Fatalf("a checkpoint before the interval passed: %v", err)
	}
	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	// Wait for the tick's checkpoint: it comes, however slowly.
	deadline := time.Now().Add(time.Minute)
	for {
		cp, err := db.LatestCheckpoint(context.Background())
		if err == nil {
			if cp.Size != 2 {
				t.Fatalf("the tick's checkpoint has size %d, want 2", cp.Size)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint a minute after the interval passed: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := pgtest.QueryInt(t, url, `SELECT count(*) FROM ledger_head WHERE pending_since IS NULL AND checkpoint_size = 2`); n != 1 {
		t.Fatal("the head still records entries waiting after the checkpoint")
	}
}

// TestCheckpointRequestsShareOne: checkpoints requested at once by many
// callers on several instances are answered with checkpoints covering
// the head, and only one is stored for it.
func TestCheckpointRequestsShareOne(t *testing.T) {
	dbs, url := instances(t, 2, Options{})
	appendN(t, dbs[0], 3, "t1")
	cps := make([]custody.Checkpoint, 16)
	errs := make([]error, len(cps))
	var wg sync.WaitGroup
	for i := range cps {
		wg.Go(func() { cps[i], errs[i] = dbs[i%2].Checkpoint(context.Background()) })
	}
	wg.Wait()
	for i := range cps {
		if errs[i] != nil || cps[i].Size != 3 || cps[i] != cps[0] {
			t.Fatalf("request %d = %+v, %v; want the one checkpoint of size 3", i, cps[i], errs[i])
		}
	}
	if n := pgtest.QueryInt(t, url, `SELECT count(*) FROM checkpoints`); n != 1 {
		t.Fatalf("%d checkpoints stored, want 1", n)
	}
}
