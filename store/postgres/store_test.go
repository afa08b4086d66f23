package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
	"github.com/custody-dev/custody/store/postgres/pgtest"
)

func entry(kind, trace string) custody.Entry {
	return custody.Entry{Kind: kind, Trace: trace, Actor: "agent-1", Body: json.RawMessage(`{"n":1}`)}
}

// TestInstancesShareOneChain appends from three instances on one database
// at once: the chain is one, gap-free and verifies, with checkpoints
// signed by whichever instance fell due.
func TestInstancesShareOneChain(t *testing.T) {
	url := pgtest.URL(t)
	key := filepath.Join(t.TempDir(), "signing.key")
	var dbs []*DB
	for range 3 {
		dbs = append(dbs, open(t, url, Options{KeyFile: key, CheckpointEvery: 50}))
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	acked := make(chan custody.Entry, 3*4*40)
	for i, db := range dbs {
		for g := range 4 {
			wg.Go(func() {
				for range 40 {
					e, err := db.Append(ctx, entry("test.kind", fmt.Sprint("i", i, "g", g)))
					if err != nil {
						t.Error(err)
						return
					}
					acked <- e
				}
			})
		}
	}
	wg.Wait()
	close(acked)
	es, err := dbs[0].Entries(ctx, custody.Query{Limit: 10000})
	if err != nil || len(es) != 480 {
		t.Fatalf("Entries = %d, %v; want 480", len(es), err)
	}
	for e := range acked {
		if got := es[e.Seq-1]; got.Hash != e.Hash || got.Trace != e.Trace {
			t.Fatalf("acknowledged entry %d (%s) is not on the ledger: found %s", e.Seq, e.Hash, got.Hash)
		}
	}
	// However the appends fell into groups, each group that left 50
	// entries uncovered signed a checkpoint.
	rep, err := dbs[1].Verify(ctx)
	if err != nil || rep.Entries != 480 || rep.Checkpoints == 0 || rep.Unsealed() >= 50 {
		t.Fatalf("Verify = %+v, %v; want 480 entries, fewer than 50 of them uncovered", rep, err)
	}
	var commits int64
	for _, db := range dbs {
		commits += db.Commits()
		if db.Commits() == 0 {
			t.Fatal("an instance committed nothing")
		}
	}
	if commits >= 480 {
		t.Logf("%d commits for 480 appends: no group commit happened", commits)
	}
}

// TestFailedGroupWritesNothing makes the insert of a group fail: neither
// its entries nor their changes are written, the head does not move, and
// the store goes on.
func TestFailedGroupWritesNothing(t *testing.T) {
	url := pgtest.URL(t)
	db := open(t, url, Options{})
	ctx := context.Background()
	if _, err := db.Append(ctx, entry("test.kind", "t1")); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, url, `CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.kind = 'boom' THEN RAISE EXCEPTION 'boom'; END IF; RETURN NEW; END; $$;
		CREATE TRIGGER boom BEFORE INSERT ON entries FOR EACH ROW EXECUTE FUNCTION boom()`)
	_, err := db.Commit(ctx, entry("boom", "t1"), custody.PutState("test", "x", json.RawMessage(`1`)), custody.IncrState("budget", "t1/x", 1, 3))
	if custody.ErrorKind(err) != custody.EUNAVAILABLE {
		t.Fatalf("Commit into a failing insert: %v, want EUNAVAILABLE", err)
	}
	if _, err := db.State(ctx, "test", "x"); custody.ErrorKind(err) != custody.ENOTFOUND {
		t.Fatalf("state of the failed group: %v, want ENOTFOUND", err)
	}
	if _, err := db.State(ctx, "budget", "t1/x"); custody.ErrorKind(err) != custody.ENOTFOUND {
		t.Fatalf("budget of the failed group: %v, want ENOTFOUND", err)
	}
	if h, err := db.Head(ctx); err != nil || h.Seq != 1 {
		t.Fatalf("Head after the failed group = %+v, %v; want seq 1", h, err)
	}
	e, err := db.Append(ctx, entry("test.kind", "t1"))
	if err != nil || e.Seq != 2 {
		t.Fatalf("Append after the failed group = seq %d, %v; want 2", e.Seq, err)
	}
	if _, err := db.Verify(ctx); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

// TestNewerSchemaRefused opens a database whose schema a newer custody
// wrote: it is refused, and says what to do.
func TestNewerSchemaRefused(t *testing.T) {
	url := pgtest.URL(t)
	open(t, url, Options{}).Close()
	pgtest.Exec(t, url, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, '0099_future.sql', 'now')`)
	_, err := Open(context.Background(), url, Options{KeyFile: filepath.Join(t.TempDir(), "signing.key")})
	if custody.ErrorKind(err) != custody.EUNAVAILABLE || err == nil {
		t.Fatalf("Open of a newer schema: %v, want EUNAVAILABLE", err)
	}
	t.Log(err)
}

// TestOtherKeyRefused starts a second instance with a key of its own: its
// checkpoints would not verify, so it is refused.
func TestOtherKeyRefused(t *testing.T) {
	url := pgtest.URL(t)
	open(t, url, Options{})
	_, err := Open(context.Background(), url, Options{KeyFile: filepath.Join(t.TempDir(), "other.key")})
	if custody.ErrorKind(err) != custody.EINVALID {
		t.Fatalf("Open with another key: %v, want EINVALID", err)
	}
}

// TestCheckpoints signs on request, when the interval has passed, and at
// Close; every checkpoint verifies against the key file's public half.
func TestCheckpoints(t *testing.T) {
	url := pgtest.URL(t)
	key := filepath.Join(t.TempDir(), "signing.key")
	var mu sync.Mutex
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	db := open(t, url, Options{KeyFile: key, Now: clock, CheckpointInterval: time.Minute})
	ctx := context.Background()
	if _, err := db.Checkpoint(ctx); custody.ErrorKind(err) != custody.ENOTFOUND {
		t.Fatalf("Checkpoint of an empty ledger: %v, want ENOTFOUND", err)
	}
	for range 3 {
		if _, err := db.Append(ctx, entry("test.kind", "t1")); err != nil {
			t.Fatal(err)
		}
	}
	cp, err := db.Checkpoint(ctx)
	if err != nil || cp.Size != 3 {
		t.Fatalf("Checkpoint = %+v, %v; want size 3", cp, err)
	}
	if ledger.CheckLedgerID(cp.Ledger) != nil || cp.Ledger != db.LedgerID() {
		t.Errorf("the checkpoint names ledger %q, the store is %q", cp.Ledger, db.LedgerID())
	}
	if other := open(t, url, Options{KeyFile: key}); other.LedgerID() != db.LedgerID() {
		t.Errorf("a second instance sees ledger %q, the first %q", other.LedgerID(), db.LedgerID())
	}
	if again, err := db.Checkpoint(ctx); err != nil || again != cp {
		t.Fatalf("Checkpoint of a covered head = %+v, %v; want the same one", again, err)
	}
	if _, err := db.Append(ctx, entry("test.kind", "t1")); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	if _, err := db.Append(ctx, entry("test.kind", "t1")); err != nil {
		t.Fatal(err)
	}
	if cp, err := db.LatestCheckpoint(ctx); err != nil || cp.Size != 5 {
		t.Fatalf("LatestCheckpoint after the interval = %+v, %v; want size 5", cp, err)
	}
	if _, err := db.Append(ctx, entry("test.kind", "t1")); err != nil {
		t.Fatal(err)
	}
	db.Close()
	other := open(t, url, Options{KeyFile: key})
	cps, err := other.Checkpoints(ctx)
	if err != nil || len(cps) != 3 || cps[2].Size != 6 {
		t.Fatalf("Checkpoints = %+v, %v; want 3, the last at Close covering 6", cps, err)
	}
	pub, err := readPub(db.PublicKeyFile())
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := other.VerifyWith(ctx, pub); err != nil || rep.Checkpoints != 3 {
		t.Fatalf("VerifyWith the exported key = %+v, %v", rep, err)
	}
}

// TestTamperDetected rewrites a body behind custody's back: Verify names
// the seq.
func TestTamperDetected(t *testing.T) {
	url := pgtest.URL(t)
	db := open(t, url, Options{})
	ctx := context.Background()
	for range 3 {
		if _, err := db.Append(ctx, entry("test.kind", "t1")); err != nil {
			t.Fatal(err)
		}
	}
	pgtest.Exec(t, url, `ALTER TABLE entries DISABLE TRIGGER entries_append_only;
		UPDATE entries SET body = '{"n":2}' WHERE seq = 2`)
	_, err := db.Verify(ctx)
	var ve *ledger.VerifyError
	if !asVerifyError(err, &ve) || ve.Seq != 2 {
		t.Fatalf("Verify of a changed body: %v, want a VerifyError at seq 2", err)
	}
}

// TestAppendOnly refuses an update of an entry at the database.
func TestAppendOnly(t *testing.T) {
	url := pgtest.URL(t)
	db := open(t, url, Options{})
	if _, err := db.Append(context.Background(), entry("test.kind", "t1")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := db.pool.Exec(ctx, `DELETE FROM entries`); err == nil {
		t.Fatal("DELETE FROM entries succeeded")
	}
}

// TestCounterNotAnInteger refuses an increment of a document that is not
// an integer, or past the range, as EINVALID, and writes nothing.
func TestCounterNotAnInteger(t *testing.T) {
	db := open(t, pgtest.URL(t), Options{})
	ctx := context.Background()
	if err := db.PutState(ctx, "test", "s", json.RawMessage(`"x"`)); err != nil {
		t.Fatal(err)
	}
	if err := db.PutState(ctx, "test", "big", json.RawMessage(`9223372036854775807`)); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"s", "big"} {
		if _, err := db.Commit(ctx, entry("test.kind", "t1"), custody.IncrState("test", key, 1, 0)); custody.ErrorKind(err) != custody.EINVALID {
			t.Fatalf("increment of %s: %v, want EINVALID", key, err)
		}
		if _, err := db.IncrState(ctx, "test", key, 1); custody.ErrorKind(err) != custody.EINVALID {
			t.Fatalf("IncrState of %s: %v, want EINVALID", key, err)
		}
	}
	if h, err := db.Head(ctx); err != nil || h.Seq != 0 {
		t.Fatalf("Head = %+v, %v; want an empty ledger", h, err)
	}
	if n, err := db.IncrState(ctx, "test", "n", 5); err != nil || n != 5 {
		t.Fatalf("IncrState of an absent counter = %d, %v; want 5", n, err)
	}
}

// TestReadOnly reads and verifies a ledger without its key file, refuses
// writes, and finds no ledger where there is none.
func TestReadOnly(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	if _, err := Open(ctx, url, Options{ReadOnly: true}); custody.ErrorKind(err) != custody.ENOTFOUND {
		t.Fatalf("read-only Open of an empty schema: %v, want ENOTFOUND", err)
	}
	w := open(t, url, Options{})
	if _, err := w.Append(ctx, entry("test.kind", "t1")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	r, err := Open(ctx, url, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.PublicKey().Equal(w.PublicKey()) {
		t.Fatal("read-only store has another public key")
	}
	if rep, err := r.Verify(ctx); err != nil || rep.Entries != 1 || rep.Checkpoints != 1 {
		t.Fatalf("Verify = %+v, %v; want 1 entry and the checkpoint of Close", rep, err)
	}
	if _, err := r.Append(ctx, entry("test.kind", "t1")); custody.ErrorKind(err) != custody.EUNAVAILABLE {
		t.Fatalf("Append to a read-only store: %v, want EUNAVAILABLE", err)
	}
}

// TestLoadRefusals: a ledger loads only into an empty store, and a load
// that fails half-way leaves it empty.
func TestLoadRefusals(t *testing.T) {
	url := pgtest.URL(t)
	db := open(t, url, Options{})
	ctx := context.Background()
	e1 := entry("test.kind", "t1")
	e1.Seq, e1.At, e1.Prev, e1.Hash = 1, "2026-03-01T12:00:00.000000Z", ledger.GenesisPrev(), "h1"
	e3 := e1
	e3.Seq = 3
	err := db.Load(ctx, func(l *Loader) error {
		if err := l.State("test", "k", json.RawMessage(`1`)); err != nil {
			return err
		}
		if err := l.Entry(e1); err != nil {
			return err
		}
		return l.Entry(e3)
	})
	if custody.ErrorKind(err) != custody.EINVALID {
		t.Fatalf("Load with a gap: %v, want EINVALID", err)
	}
	if h, err := db.Head(ctx); err != nil || h.Seq != 0 {
		t.Fatalf("Head after a failed load = %+v, %v; want empty", h, err)
	}
	if _, err := db.State(ctx, "test", "k"); custody.ErrorKind(err) != custody.ENOTFOUND {
		t.Fatalf("state after a failed load: %v, want ENOTFOUND", err)
	}
	if _, err := db.Append(ctx, entry("test.kind", "t1")); err != nil {
		t.Fatal(err)
	}
	if err := db.Load(ctx, func(*Loader) error { return nil }); custody.ErrorKind(err) != custody.ECONFLICT {
		t.Fatalf("Load into a used store: %v, want ECONFLICT", err)
	}
}

// TestConnectionsLost cuts every connection of an instance under load:
// appends fail closed as EUNAVAILABLE, the instance reconnects, and
// every acknowledged entry is on a chain that verifies.
func TestConnectionsLost(t *testing.T) {
	url := pgtest.URL(t) + "&application_name=custody_cut_test"
	db := open(t, url, Options{})
	ctx := context.Background()
	var mu sync.Mutex
	var acked []custody.Entry
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				e, err := db.Append(ctx, entry("test.kind", fmt.Sprint("g", g)))
				switch {
				case err == nil:
					mu.Lock()
					acked = append(acked, e)
					mu.Unlock()
				case custody.ErrorKind(err) != custody.EUNAVAILABLE:
					t.Errorf("Append with the connections cut: %v, want EUNAVAILABLE", err)
					return
				}
			}
		})
	}
	for range 3 {
		time.Sleep(50 * time.Millisecond)
		pgtest.Exec(t, url, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE application_name = 'custody_cut_test' AND pid <> pg_backend_pid()`)
	}
	time.Sleep(50 * time.Millisecond)
	close(stop)
	wg.Wait()
	// The pool may still hold a connection the last cut ended, which
	// fails its next use (EUNAVAILABLE): the instance is back once an
	// append goes through on a new one.
	for deadline := time.Now().Add(30 * time.Second); ; {
		_, err := db.Append(ctx, entry("test.kind", "after"))
		if err == nil {
			break
		}
		if custody.ErrorKind(err) != custody.EUNAVAILABLE || time.Now().After(deadline) {
			t.Fatalf("Append once the server is back: %v", err)
		}
	}
	es, err := db.Entries(ctx, custody.Query{Limit: 100000})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range acked {
		if e.Seq > int64(len(es)) || es[e.Seq-1].Hash != e.Hash {
			t.Fatalf("acknowledged entry %d is not on the ledger", e.Seq)
		}
	}
	if _, err := db.Verify(ctx); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	t.Logf("%d appends acknowledged, %d entries", len(acked), len(es))
}

// TestApprovalChanges: an instance hears of the approvals another
// instance creates and decides, as they commit.
func TestApprovalChanges(t *testing.T) {
	url := pgtest.URL(t)
	key := filepath.Join(t.TempDir(), "signing.key")
	a, b := open(t, url, Options{KeyFile: key}), open(t, url, Options{KeyFile: key})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ids, err := b.ApprovalChanges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ap := custody.Approval{ID: "ap-1", Status: custody.ApprovalPending, Tool: "t", Trace: "t1", Digest: "d",
		CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}
	if _, err := a.Commit(ctx, entry(custody.KindApprovalRequest, "t1"), custody.CreateApproval(ap)); err != nil {
		t.Fatal(err)
	}
	decided := ap
	decided.Status = custody.ApprovalApproved
	if _, err := a.Commit(ctx, entry(custody.KindApprovalDecided, "t1"), custody.UpdateApproval(decided, custody.ApprovalPending)); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		select {
		case id := <-ids:
			if id != "ap-1" {
				t.Fatalf("notification %d names %q, want ap-1", i, id)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("notification %d did not come", i)
		}
	}
	cancel()
	for range ids { // the channel closes once ctx ends
	}
}

func TestApprovalChannelFits(t *testing.T) {
	if c := approvalChannel(strings.Repeat("s", 63)); len(c) > 63 {
		t.Fatalf("channel %q is longer than PostgreSQL's 63 bytes", c)
	}
	if approvalChannel("a") == approvalChannel("b") {
		t.Fatal("two schemas share a channel")
	}
}
