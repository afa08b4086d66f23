package sqlite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
)

func TestAppendRoundTrip(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{})
	if h, _ := db.Head(ctx); h.Seq != 0 || h.Hash != "" {
		t.Fatalf("empty Head = %+v", h)
	}
	body := []byte("{ \"b\" : [1, 2.50, \"x\"],\n  \"a\": null }")
	in := custody.Entry{Kind: custody.KindCallStarted, Trace: "t1", Actor: "agent", Body: body,
		Refs: map[string]string{"approval_request_id": "ap-1"}}
	first := mustAppend(t, db, in)
	second := mustAppend(t, db, entry("k2", "t1", nil, 2))

	if first.Seq != 1 || first.Prev != ledger.GenesisPrev() || first.At == "" {
		t.Errorf("first = %+v", first)
	}
	if second.Seq != 2 || second.Prev != first.Hash {
		t.Errorf("second does not follow first: %+v", second)
	}
	if h, _ := db.Head(ctx); h != (custody.Receipt{Seq: 2, Hash: second.Hash}) || db.Size() != 2 {
		t.Errorf("Head = %+v, Size = %d", h, db.Size())
	}
	got, err := db.Entries(ctx, custody.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("Entries returned %d entries", len(got))
	}
	if !bytes.Equal(got[0].Body, body) {
		t.Errorf("body = %q, want the exact bytes %q", got[0].Body, body)
	}
	if fmt.Sprint(got[0]) != fmt.Sprint(first) || fmt.Sprint(got[1]) != fmt.Sprint(second) {
		t.Errorf("read back\n%+v\n%+v\nwant\n%+v\n%+v", got[0], got[1], first, second)
	}
	if got[1].Refs == nil {
		t.Error("refs of an entry without refs is nil, want an empty object")
	}
}

func TestHeadRecoveredOnOpen(t *testing.T) {
	dir := t.TempDir()
	db := openDir(t, dir, Options{})
	last := mustAppend(t, db, entry("k", "t", nil, 1))
	last = mustAppend(t, db, entry("k", "t", nil, 2))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openDir(t, dir, Options{})
	if h, _ := db.Head(context.Background()); h.Seq != 2 || h.Hash != last.Hash {
		t.Fatalf("Head after reopen = %+v, want seq 2 %s", h, last.Hash)
	}
	next := mustAppend(t, db, entry("k", "t", nil, 3))
	if next.Seq != 3 || next.Prev != last.Hash {
		t.Fatalf("append after reopen = seq %d prev %s", next.Seq, next.Prev)
	}
}

func TestEntriesFilters(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{})
	// seq: kind trace refs
	// 1: a t1 {x:1}  2: b t1 {x:1,y:2}  3: a t2 {x:1}  4: b t2 {}  5: a t1 {y:2}
	for i, e := range []custody.Entry{
		entry("a", "t1", map[string]string{"x": "1"}, 1),
		entry("b", "t1", map[string]string{"x": "1", "y": "2"}, 2),
		entry("a", "t2", map[string]string{"x": "1"}, 3),
		entry("b", "t2", nil, 4),
		entry("a", "t1", map[string]string{"y": "2"}, 5),
	} {
		if got := mustAppend(t, db, e); got.Seq != int64(i+1) {
			t.Fatalf("seq %d, want %d", got.Seq, i+1)
		}
	}
	tests := []struct {
		name string
		q    custody.Query
		want []int64
	}{
		{"All", custody.Query{}, []int64{1, 2, 3, 4, 5}},
		{"After", custody.Query{After: 3}, []int64{4, 5}},
		{"Limit", custody.Query{Limit: 2}, []int64{1, 2}},
		{"AfterLimit", custody.Query{After: 1, Limit: 2}, []int64{2, 3}},
		{"Trace", custody.Query{Trace: "t1"}, []int64{1, 2, 5}},
		{"Kind", custody.Query{Kind: "b"}, []int64{2, 4}},
		{"TraceKind", custody.Query{Trace: "t1", Kind: "a"}, []int64{1, 5}},
		{"Ref", custody.Query{Refs: map[string]string{"x": "1"}}, []int64{1, 2, 3}},
		{"TwoRefs", custody.Query{Refs: map[string]string{"x": "1", "y": "2"}}, []int64{2}},
		{"TraceRef", custody.Query{Trace: "t2", Refs: map[string]string{"x": "1"}}, []int64{3}},
		{"RefValueDiffers", custody.Query{Refs: map[string]string{"x": "2"}}, nil},
		{"UnknownTrace", custody.Query{Trace: "nope"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := db.Entries(ctx, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			var seqs []int64
			for _, e := range got {
				seqs = append(seqs, e.Seq)
			}
			if fmt.Sprint(seqs) != fmt.Sprint(tt.want) {
				t.Errorf("seqs = %v, want %v", seqs, tt.want)
			}
		})
	}
	if _, err := db.Entries(ctx, custody.Query{Limit: -1}); kindOf(err) != custody.EINVALID {
		t.Errorf("negative limit: err = %v, want EINVALID", err)
	}
}

func TestEntriesDefaultLimit(t *testing.T) {
	db := openTest(t, Options{})
	appendConcurrently(t, db, 20, (DefaultLimit+20)/20)
	got, err := db.Entries(context.Background(), custody.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != DefaultLimit {
		t.Fatalf("Entries returned %d entries, want the default limit %d", len(got), DefaultLimit)
	}
}

func TestAppendRefusesBadInput(t *testing.T) {
	tests := []struct {
		name  string
		e     custody.Entry
		where string // a word the message must contain
	}{
		{"NotJSON", custody.Entry{Kind: "k", Body: []byte(`{"a":`)}, "body"},
		{"Empty", custody.Entry{Kind: "k"}, "body"},
		{"TrailingData", custody.Entry{Kind: "k", Body: []byte(`{} {}`)}, "after"},
		{"DuplicateKey", custody.Entry{Kind: "k", Body: []byte(`{"a":1,"a":2}`)}, "duplicate"},
		{"BigInteger", custody.Entry{Kind: "k", Body: []byte(`{"n":9007199254740993}`)}, "2^53"},
		{"InvalidUTF8Body", custody.Entry{Kind: "k", Body: []byte("{\"s\":\"\xff\"}")}, "UTF-8"},
		{"InvalidUTF8Actor", custody.Entry{Kind: "k", Actor: "\xfe", Body: []byte(`{}`)}, "UTF-8"},
		{"InvalidUTF8Ref", custody.Entry{Kind: "k", Refs: map[string]string{"r": "\xff"}, Body: []byte(`{}`)}, "UTF-8"},
		{"NoKind", custody.Entry{Body: []byte(`{}`)}, "kind"},
	}
	ctx := context.Background()
	db := openTest(t, Options{})
	prev := mustAppend(t, db, entry("k", "t", nil, 0))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := db.Append(ctx, tt.e)
			if kindOf(err) != custody.EINVALID {
				t.Fatalf("err = %v, want EINVALID", err)
			}
			if msg := custody.ErrorMessage(err); !strings.Contains(msg, tt.where) {
				t.Errorf("message %q does not name the problem (%q)", msg, tt.where)
			}
			if db.Size() != prev.Seq {
				t.Fatalf("Size = %d after a refused append, want %d", db.Size(), prev.Seq)
			}
			next := mustAppend(t, db, entry("k", "t", nil, int(prev.Seq)))
			if next.Seq != prev.Seq+1 || next.Prev != prev.Hash {
				t.Fatalf("chain after a refusal: seq %d prev %s, want %d %s", next.Seq, next.Prev, prev.Seq+1, prev.Hash)
			}
			prev = next
		})
	}
	if _, err := db.Verify(ctx); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

// TestBadEntryRefusedBeforeTheWriter puts a valid entry, an entry that
// cannot be sealed and another valid entry to a busy writer: the bad one
// is refused at once, in its caller, without waiting for the writer, and
// the valid ones commit as one batch, chained to each other.
func TestBadEntryRefusedBeforeTheWriter(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{})
	release := holdWriter(t, db)
	bad := entry("k", "t", nil, 2)
	bad.At = "\xff" // not UTF-8: the entry cannot be hashed
	good := []custody.Entry{entry("k", "t", nil, 1), entry("k", "t", nil, 3)}
	out, errs := make([]custody.Entry, len(good)), make([]error, len(good))
	var wg sync.WaitGroup
	wg.Go(func() { out[0], errs[0] = db.Append(ctx, good[0]) })
	waitQueued(t, db, 1)
	refused := make(chan error, 1)
	go func() { _, err := db.Append(ctx, bad); refused <- err }()
	select {
	case err := <-refused:
		if kindOf(err) != custody.EINVALID || !strings.Contains(custody.ErrorMessage(err), "at") {
			t.Errorf("bad entry: err = %v, want EINVALID naming at", err)
		}
	case <-time.After(10 * time.Second):
		release() // the writer is still held: only the caller can refuse
		t.Fatal("the bad entry waited for the writer")
	}
	wg.Go(func() { out[1], errs[1] = db.Append(ctx, good[1]) })
	waitQueued(t, db, 2)
	before := db.Commits()
	release()
	wg.Wait()
	if n := db.Commits() - before; n != 2 {
		t.Errorf("%d transactions, want 2 (the hold and one batch)", n)
	}
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("valid entries failed: %v, %v", errs[0], errs[1])
	}
	if out[0].Seq != 1 || out[1].Seq != 2 || out[1].Prev != out[0].Hash {
		t.Fatalf("seqs %d, %d; prev of the second %s", out[0].Seq, out[1].Seq, out[1].Prev)
	}
	if _, err := db.Verify(ctx); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

// TestFailedBatchLeavesHead makes the database refuse one insert of a
// batch: the whole batch fails, the head stays, the chain goes on.
func TestFailedBatchLeavesHead(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := openDir(t, dir, Options{})
	first := mustAppend(t, db, entry("k", "t", nil, 1))
	rawExec(t, dir, `CREATE TRIGGER boom BEFORE INSERT ON entries WHEN NEW.kind = 'boom'
		BEGIN SELECT RAISE(ABORT, 'boom'); END`)

	release := holdWriter(t, db)
	in := []custody.Entry{entry("k", "t", nil, 2), entry("boom", "t", nil, 3), entry("k", "t", nil, 4)}
	errs := make([]error, len(in))
	var wg sync.WaitGroup
	for i := range in {
		wg.Go(func() { _, errs[i] = db.Append(ctx, in[i]) })
	}
	waitQueued(t, db, len(in))
	release()
	wg.Wait()
	for i, err := range errs {
		if kindOf(err) != custody.EUNAVAILABLE {
			t.Errorf("append %d: err = %v, want EUNAVAILABLE", i, err)
		}
	}
	if h, _ := db.Head(ctx); h.Seq != 1 || h.Hash != first.Hash {
		t.Fatalf("Head = %+v after a failed batch, want seq 1", h)
	}
	if got, _ := db.Entries(ctx, custody.Query{}); len(got) != 1 {
		t.Fatalf("%d entries stored, want 1", len(got))
	}

	rawExec(t, dir, `DROP TRIGGER boom`)
	next := mustAppend(t, db, entry("k", "t", nil, 5))
	if next.Seq != 2 || next.Prev != first.Hash {
		t.Fatalf("append after the failure: seq %d prev %s", next.Seq, next.Prev)
	}
	if _, err := db.Verify(ctx); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

// appendConcurrently appends n entries from each of writers goroutines and
// returns the sealed entries.
func appendConcurrently(t testing.TB, db *DB, writers, n int) []custody.Entry {
	t.Helper()
	var mu sync.Mutex
	var out []custody.Entry
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range n {
				e, err := db.Append(context.Background(), entry("k", fmt.Sprint("t", w), map[string]string{"i": fmt.Sprint(i)}, i))
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				out = append(out, e)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Append: %v", err)
	}
	return out
}

func TestConcurrentAppends(t *testing.T) {
	const writers, n = 32, 40
	db := openTest(t, Options{CheckpointEvery: 100})
	got := appendConcurrently(t, db, writers, n)
	seen := map[int64]bool{}
	for _, e := range got {
		if seen[e.Seq] {
			t.Fatalf("seq %d acknowledged twice", e.Seq)
		}
		seen[e.Seq] = true
	}
	for seq := int64(1); seq <= writers*n; seq++ {
		if !seen[seq] {
			t.Fatalf("seq %d missing: seqs are not dense", seq)
		}
	}
	r, err := db.Verify(context.Background())
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if r.Entries != writers*n || r.Checkpoints < 1 {
		t.Fatalf("Verify report %+v", r)
	}
}

func TestGroupCommit(t *testing.T) {
	const n = 64
	t.Run("Queued", func(t *testing.T) {
		db := openTest(t, Options{})
		release := holdWriter(t, db)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { mustAppend(t, db, entry("k", "t", nil, i)) })
		}
		waitQueued(t, db, n)
		before := db.Commits()
		release()
		wg.Wait()
		if got := db.Commits() - before; got != 2 {
			t.Fatalf("%d appends queued behind one write committed in %d transactions, want 2", n, got)
		}
	})
	t.Run("Concurrent", func(t *testing.T) {
		db := openTest(t, Options{})
		before := db.Commits()
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				mustAppend(t, db, entry("k", "t", nil, i))
			})
		}
		close(start)
		wg.Wait()
		if got := db.Commits() - before; got > n/2 {
			t.Fatalf("%d concurrent appends took %d transactions, want at most %d", n, got, n/2)
		} else {
			t.Logf("%d concurrent appends committed in %d transactions", n, got)
		}
	})
}

func TestAppendAfterClose(t *testing.T) {
	db := openTest(t, Options{})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Append(context.Background(), entry("k", "t", nil, 1)); kindOf(err) != custody.EUNAVAILABLE {
		t.Fatalf("Append after Close: err = %v, want EUNAVAILABLE", err)
	}
	if err := db.PutState(context.Background(), "ns", "k", []byte(`1`)); kindOf(err) != custody.EUNAVAILABLE {
		t.Fatalf("PutState after Close: err = %v, want EUNAVAILABLE", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestCloseDrains closes the store while appends are in flight: every
// append either failed with EUNAVAILABLE or is on the ledger.
func TestCloseDrains(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	acked := map[int64]string{}
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := 0; ; i++ {
				e, err := db.Append(context.Background(), entry("k", "t", nil, w*1000+i))
				if kindOf(err) == custody.EUNAVAILABLE {
					return
				}
				if err != nil {
					t.Errorf("Append: %v", err)
					return
				}
				mu.Lock()
				acked[e.Seq] = e.Hash
				mu.Unlock()
			}
		})
	}
	for db.Size() < 100 {
		runtimeYield()
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	db = openDir(t, dir, Options{})
	checkAcked(t, db, acked)
	cp, err := db.LatestCheckpoint(context.Background())
	if err != nil || cp.Size != db.Size() {
		t.Fatalf("latest checkpoint %+v, %v; want one at the head %d written by Close", cp, err, db.Size())
	}
}

// checkAcked verifies db and checks that every acknowledged append is on it
// with the same hash.
func checkAcked(t *testing.T, db *DB, acked map[int64]string) {
	t.Helper()
	ctx := context.Background()
	if _, err := db.Verify(ctx); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	all := map[int64]string{}
	for after := int64(0); ; {
		es, err := db.Entries(ctx, custody.Query{After: after, Limit: 5000})
		if err != nil {
			t.Fatal(err)
		}
		if len(es) == 0 {
			break
		}
		for _, e := range es {
			all[e.Seq] = e.Hash
		}
		after = es[len(es)-1].Seq
	}
	for seq, hash := range acked {
		if all[seq] != hash {
			t.Fatalf("acknowledged seq %d (%s) is missing or different (%q)", seq, hash, all[seq])
		}
	}
}

func TestAppendCanceledContext(t *testing.T) {
	db := openTest(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := db.Append(ctx, entry("k", "t", nil, 1))
	if kindOf(err) != custody.EUNAVAILABLE || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want EUNAVAILABLE wrapping context.Canceled", err)
	}
	if db.Size() != 0 {
		t.Fatalf("Size = %d, want 0", db.Size())
	}
}
