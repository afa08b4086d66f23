package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/store/postgres/pgtest"
)

var approvalTime = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// approvalOf is a pending request of trace for the action digest "d-"+id.
func approvalOf(id, trace string) custody.Approval {
	return custody.Approval{ID: id, Status: custody.ApprovalPending, Tool: "vms.update", Arguments: json.RawMessage(`{"sign":"A1"}`),
		Digest: "d-" + id, Trace: trace, Requester: "agent-1", CreatedAt: approvalTime, ExpiresAt: approvalTime.Add(time.Hour)}
}

// commit commits an entry of trace t1 with changes.
func commit(db *DB, changes ...custody.Change) (custody.Entry, error) {
	return db.Commit(context.Background(), entry("test.kind", "t1"), changes...)
}

// TestStateChanges: a committed document is kept byte for byte, a later
// one replaces it, and States lists one namespace alone.
func TestStateChanges(t *testing.T) {
	db := open(t, pgtest.URL(t), Options{})
	ctx := context.Background()
	spaced := json.RawMessage("{ \"a\" : 1,\n \"b\": [ ] }")
	if _, err := commit(db, custody.PutState("test", "k", spaced), custody.PutState("other", "k", json.RawMessage(`2`))); err != nil {
		t.Fatal(err)
	}
	if doc, err := db.State(ctx, "test", "k"); err != nil || string(doc) != string(spaced) {
		t.Fatalf("State = %q, %v; want the bytes committed", doc, err)
	}
	if _, err := commit(db, custody.PutState("test", "k", json.RawMessage(`"second"`))); err != nil {
		t.Fatal(err)
	}
	if err := db.PutState(ctx, "test", "j", json.RawMessage(`true`)); err != nil {
		t.Fatal(err)
	}
	wantKind(t, "PutState of a document that is not JSON", db.PutState(ctx, "test", "bad", json.RawMessage(`{`)), custody.EINVALID)
	docs, err := db.States(ctx, "test")
	if err != nil || len(docs) != 2 || string(docs["k"]) != `"second"` || string(docs["j"]) != `true` {
		t.Fatalf("States = %v, %v; want k and j of test alone", docs, err)
	}
	if docs, err := db.States(ctx, "none"); err != nil || len(docs) != 0 {
		t.Fatalf("States of an empty namespace = %v, %v", docs, err)
	}
	_, err = db.State(ctx, "test", "bad")
	wantKind(t, "State of a refused document", err, custody.ENOTFOUND)
}

// TestCounterLimits runs increments against a ceiling: each that would
// pass it is EDENIED (or the change's own refusal) and writes neither the
// counter nor the entry.
func TestCounterLimits(t *testing.T) {
	type step struct {
		delta, limit, want int64 // want 0: refused
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"UpToTheLimit", []step{{1, 3, 1}, {1, 3, 2}, {1, 3, 3}, {1, 3, 0}}},
		{"JumpPastTheLimit", []step{{2, 3, 2}, {2, 3, 0}, {1, 3, 3}}},
		{"FirstAbove", []step{{5, 3, 0}, {3, 3, 3}}},
		{"NoLimit", []step{{1_000_000, 0, 1_000_000}, {1, 0, 1_000_001}}},
		{"Negative", []step{{3, 3, 3}, {-2, 3, 1}, {2, 3, 3}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := open(t, pgtest.URL(t), Options{})
			ctx := context.Background()
			var last int64
			var seq int64
			for i, s := range tc.steps {
				e, err := commit(db, custody.IncrState("budget", "t1/x", s.delta, s.limit))
				if s.want == 0 {
					wantKind(t, fmt.Sprintf("step %d", i), err, custody.EDENIED)
				} else {
					if err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
					seq++
					if e.Seq != seq {
						t.Fatalf("step %d: seq %d, want %d: a refused entry took a seq", i, e.Seq, seq)
					}
					last = s.want
				}
				doc, err := db.State(ctx, "budget", "t1/x")
				switch {
				case last == 0 && custody.ErrorKind(err) != custody.ENOTFOUND:
					t.Fatalf("step %d: counter %s, %v; want none yet", i, doc, err)
				case last != 0 && (err != nil || string(doc) != fmt.Sprint(last)):
					t.Fatalf("step %d: counter %s, %v; want %d", i, doc, err, last)
				}
			}
		})
	}
}

// TestRefusalOfChange: a change's own refusal replaces the store's error
// when its condition fails, but never an EINVALID.
func TestRefusalOfChange(t *testing.T) {
	db := open(t, pgtest.URL(t), Options{})
	over := &custody.Error{Kind: custody.EDENIED, Message: "the trace's budget is spent"}
	if _, err := commit(db, custody.IncrState("budget", "k", 1, 1)); err != nil {
		t.Fatal(err)
	}
	_, err := commit(db, custody.IncrState("budget", "k", 1, 1).Else(over))
	var ce *custody.Error
	if !errors.As(err, &ce) || ce != over {
		t.Fatalf("Commit past the limit: %v, want the change's own refusal", err)
	}
	missing := &custody.Error{Kind: custody.EDENIED, Message: "no such approval"}
	if _, err := commit(db, custody.ConsumeApproval("nope").Else(missing)); !errors.As(err, &ce) || ce != missing {
		t.Fatalf("Commit using a missing approval: %v, want the change's own refusal", err)
	}
	if err := db.PutState(context.Background(), "budget", "text", json.RawMessage(`"x"`)); err != nil {
		t.Fatal(err)
	}
	_, err = commit(db, custody.IncrState("budget", "text", 1, 5).Else(over))
	wantKind(t, "increment of a document that is not an integer", err, custody.EINVALID)
}

// TestApprovalLifecycle walks a request through create, decide and use,
// with every refusal on the way: a duplicate, a decision from the wrong
// status, a use before approval, a second use, and requests that do not
// exist. A refused change leaves the request as it was.
func TestApprovalLifecycle(t *testing.T) {
	db := open(t, pgtest.URL(t), Options{})
	ctx := context.Background()
	ap := approvalOf("ap-1", "t1")
	if _, err := commit(db, custody.CreateApproval(ap)); err != nil {
		t.Fatal(err)
	}
	got, err := db.Approval(ctx, "ap-1")
	if err != nil || got.Tool != ap.Tool || got.Digest != ap.Digest || !got.CreatedAt.Equal(ap.CreatedAt) || string(got.Arguments) != string(ap.Arguments) {
		t.Fatalf("Approval = %+v, %v; want the request created", got, err)
	}
	approved := ap
	approved.Status, approved.Operator = custody.ApprovalApproved, "op-1"
	steps := []struct {
		name   string
		change custody.Change
		kind   string
		status custody.ApprovalStatus
	}{
		{"ErrDuplicate", custody.CreateApproval(ap), custody.ECONFLICT, custody.ApprovalPending},
		{"ErrDecideFromWrongStatus", custody.UpdateApproval(approved, custody.ApprovalApproved), custody.ECONFLICT, custody.ApprovalPending},
		{"ErrUseBeforeApproval", custody.ConsumeApproval("ap-1"), custody.ECONFLICT, custody.ApprovalPending},
		{"Approve", custody.UpdateApproval(approved, custody.ApprovalPending), "", custody.ApprovalApproved},
		{"ErrApproveTwice", custody.UpdateApproval(approved, custody.ApprovalPending), custody.ECONFLICT, custody.ApprovalApproved},
		{"Use", custody.ConsumeApproval("ap-1"), "", custody.ApprovalConsumed},
		{"ErrUseTwice", custody.ConsumeApproval("ap-1"), custody.ECONFLICT, custody.ApprovalConsumed},
		{"ErrDecideMissing", custody.UpdateApproval(approvalOf("nope", "t1"), custody.ApprovalPending), custody.ENOTFOUND, custody.ApprovalConsumed},
		{"ErrUseMissing", custody.ConsumeApproval("nope"), custody.ENOTFOUND, custody.ApprovalConsumed},
	}
	var used int64
	for _, s := range steps {
		e, err := commit(db, s.change)
		if s.kind == "" && err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if s.kind != "" {
			wantKind(t, s.name, err, s.kind)
		}
		if s.name == "Use" {
			used = e.Seq
		}
		got, err := db.Approval(ctx, "ap-1")
		if err != nil || got.Status != s.status {
			t.Fatalf("%s: the request is %s (%v), want %s", s.name, got.Status, err, s.status)
		}
	}
	got, err = db.Approval(ctx, "ap-1")
	if err != nil || got.ConsumedSeq != used || got.Operator != "op-1" {
		t.Fatalf("the used request = %+v, %v; want consumed by seq %d, decided by op-1", got, err, used)
	}
	_, err = db.Approval(ctx, "nope")
	wantKind(t, "Approval of a missing request", err, custody.ENOTFOUND)
	if h, err := db.Head(ctx); err != nil || h.Seq != 3 {
		t.Fatalf("Head = %+v, %v; want the 3 entries whose changes held", h, err)
	}
}

// TestApprovalRebound: an operator's edit rebinds a request to a new
// digest; it is found by both, and the queue lists requests newest first
// by status.
func TestApprovalRebound(t *testing.T) {
	db := open(t, pgtest.URL(t), Options{})
	ctx := context.Background()
	older, newer := approvalOf("ap-1", "t1"), approvalOf("ap-2", "t1")
	newer.CreatedAt = older.CreatedAt.Add(time.Minute)
	if _, err := commit(db, custody.CreateApproval(older), custody.CreateApproval(newer)); err != nil {
		t.Fatal(err)
	}
	edited := older
	edited.Status, edited.Digest = custody.ApprovalApproved, "d-edited"
	if _, err := commit(db, custody.UpdateApproval(edited, custody.ApprovalPending)); err != nil {
		t.Fatal(err)
	}
	for _, digest := range []string{"d-ap-1", "d-edited"} {
		as, err := db.ApprovalsFor(ctx, "t1", digest)
		if err != nil || len(as) != 1 || as[0].ID != "ap-1" || as[0].Digest != "d-edited" {
			t.Fatalf("ApprovalsFor %s = %+v, %v; want ap-1 bound to d-edited", digest, as, err)
		}
	}
	if as, err := db.ApprovalsFor(ctx, "t2", "d-edited"); err != nil || len(as) != 0 {
		t.Fatalf("ApprovalsFor another trace = %+v, %v; want none", as, err)
	}
	all, err := db.Approvals(ctx, "")
	if err != nil || len(all) != 2 || all[0].ID != "ap-2" || all[1].ID != "ap-1" {
		t.Fatalf("Approvals = %+v, %v; want ap-2 then ap-1", all, err)
	}
	pending, err := db.Approvals(ctx, custody.ApprovalPending)
	if err != nil || len(pending) != 1 || pending[0].ID != "ap-2" {
		t.Fatalf("pending Approvals = %+v, %v; want ap-2", pending, err)
	}
}

// TestRefusedChangeUndoesItsEntryAlone: a change that fails undoes the
// changes before it in the same commit, and only those.
func TestRefusedChangeUndoesItsEntryAlone(t *testing.T) {
	db := open(t, pgtest.URL(t), Options{})
	ctx := context.Background()
	if _, err := commit(db, custody.PutState("test", "kept", json.RawMessage(`1`))); err != nil {
		t.Fatal(err)
	}
	_, err := commit(db, custody.PutState("test", "kept", json.RawMessage(`2`)), custody.PutState("test", "new", json.RawMessage(`2`)),
		custody.IncrState("budget", "k", 1, 1), custody.ConsumeApproval("nope"))
	wantKind(t, "Commit whose last change fails", err, custody.ENOTFOUND)
	if doc, err := db.State(ctx, "test", "kept"); err != nil || string(doc) != `1` {
		t.Fatalf("state before the refused commit = %s, %v; want 1", doc, err)
	}
	for _, k := range []struct{ ns, key string }{{"test", "new"}, {"budget", "k"}} {
		_, err := db.State(ctx, k.ns, k.key)
		wantKind(t, "state of the refused commit", err, custody.ENOTFOUND)
	}
}

// TestRefusalsInOneGroup commits at once, from many goroutines, entries
// whose changes hold and entries whose changes fail: whichever groups
// they share, each refused one is refused alone and each other one is
// written with its change, on a chain without gaps.
func TestRefusalsInOneGroup(t *testing.T) {
	db := open(t, pgtest.URL(t), Options{})
	ctx := context.Background()
	const n = 64
	errs := make([]error, n)
	seqs := make([]int64, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			c := custody.PutState("test", fmt.Sprint("k", i), json.RawMessage(fmt.Sprint(i)))
			if i%2 == 1 {
				c = custody.ConsumeApproval(fmt.Sprint("missing-", i))
			}
			e, err := commit(db, c)
			errs[i], seqs[i] = err, e.Seq
		})
	}
	close(start)
	wg.Wait()
	seen := map[int64]bool{}
	for i := range n {
		if i%2 == 1 {
			wantKind(t, fmt.Sprint("commit ", i), errs[i], custody.ENOTFOUND)
			continue
		}
		if errs[i] != nil {
			t.Fatalf("commit %d: %v", i, errs[i])
		}
		if seqs[i] < 1 || seqs[i] > n/2 || seen[seqs[i]] {
			t.Fatalf("commit %d has seq %d: want a seq of its own in 1..%d", i, seqs[i], n/2)
		}
		seen[seqs[i]] = true
	}
	docs, err := db.States(ctx, "test")
	if err != nil || len(docs) != n/2 {
		t.Fatalf("States = %d documents, %v; want %d", len(docs), err, n/2)
	}
	if rep, err := db.Verify(ctx); err != nil || rep.Entries != n/2 {
		t.Fatalf("Verify = %+v, %v; want %d entries", rep, err, n/2)
	}
}
