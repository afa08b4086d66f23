// Package storetest is the conformance suite of the store contracts in
// package custody (Ledger, ApprovalStore, StateStore and Ledger.Commit's
// changes): every implementation runs Run against fresh stores of its
// own, so that the gateway can count on the same behaviour from each.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) custody.Store { return open(t) })
//	}
package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
)

// Open returns a new, empty store that the test owns; Run closes it at
// the end of the test.
type Open func(t *testing.T) custody.Store

// Run runs the whole suite, each case on a store of its own.
func Run(t *testing.T, open Open) {
	cases := []struct {
		name string
		fn   func(*testing.T, custody.Store)
	}{
		{"AppendChains", testAppendChains},
		{"EntriesInOrder", testEntriesInOrder},
		{"CommitWritesEntryAndState", testCommitWritesEntryAndState},
		{"FailedChangeWritesNothing", testFailedChangeWritesNothing},
		{"MalformedChangeWritesNothing", testMalformedChange},
		{"DecideOnce", testDecideOnce},
		{"ConsumeOnceUnderConcurrency", testConsumeOnce},
		{"BudgetLimit", testBudgetLimit},
		{"BudgetUnderConcurrency", testBudgetUnderConcurrency},
		{"RefLookup", testRefLookup},
		{"ApprovalsByDigest", testApprovalsByDigest},
		{"ApprovalsByRequester", testApprovalsByRequester},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() { s.Close() })
			c.fn(t, s)
		})
	}
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func entry(kind, trace string) custody.Entry {
	return custody.Entry{Kind: kind, Trace: trace, Actor: "agent-1", Refs: map[string]string{}, Body: json.RawMessage(`{"n":1}`)}
}

func pending(id, trace, digest string) custody.Approval {
	return custody.Approval{
		ID: id, Status: custody.ApprovalPending, Tool: "vms.update",
		Arguments: json.RawMessage(`{"sign":"A1"}`), Digest: digest, Trace: trace, Requester: "agent-1",
		CreatedAt: t0, ExpiresAt: t0.Add(time.Hour),
	}
}

func kind(err error) string { return custody.ErrorKind(err) }

func size(t *testing.T, s custody.Store) int64 {
	t.Helper()
	h, err := s.Head(context.Background())
	if err != nil {
		t.Fatalf("Head: %v", err)
	}
	return h.Seq
}

func testAppendChains(t *testing.T, s custody.Store) {
	ctx := context.Background()
	prev := ledger.GenesisPrev()
	v := ledger.NewVerifier(nil)
	for i := 1; i <= 5; i++ {
		e, err := s.Append(ctx, entry("test.kind", "t1"))
		if err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
		if e.Seq != int64(i) || e.Prev != prev || e.Hash == "" || e.At == "" {
			t.Fatalf("entry %d = seq %d prev %q hash %q at %q; want seq %d after %q", i, e.Seq, e.Prev, e.Hash, e.At, i, prev)
		}
		if err := v.Entries([]custody.Entry{e}); err != nil {
			t.Fatalf("entry %d does not verify as the next link: %v", i, err)
		}
		prev = e.Hash
	}
	h, err := s.Head(ctx)
	if err != nil || h.Seq != 5 || h.Hash != prev {
		t.Fatalf("Head = %+v, %v; want seq 5 hash %s", h, err, prev)
	}
	if _, err := s.Append(ctx, custody.Entry{Kind: "bad", Body: json.RawMessage(`{"a":1,"a":2}`)}); kind(err) != custody.EINVALID {
		t.Fatalf("Append with duplicate keys: %v, want EINVALID", err)
	}
	if n := size(t, s); n != 5 {
		t.Fatalf("size after a refused append = %d, want 5", n)
	}
}

func testEntriesInOrder(t *testing.T, s custody.Store) {
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				if _, err := s.Commit(ctx, entry("test.kind", fmt.Sprint("t", g))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	es, err := s.Entries(ctx, custody.Query{})
	if err != nil || len(es) != 200 {
		t.Fatalf("Entries = %d entries, %v; want 200", len(es), err)
	}
	for i := range es {
		if es[i].Seq != int64(i+1) {
			t.Fatalf("entry %d has seq %d", i, es[i].Seq)
		}
	}
	if err := ledger.NewVerifier(s.PublicKey()).Entries(es); err != nil {
		t.Fatalf("verify: %v", err)
	}
	got, err := s.Entries(ctx, custody.Query{After: 150, Limit: 10})
	if err != nil || len(got) != 10 || got[0].Seq != 151 {
		t.Fatalf("Entries after 150 limit 10 = %d entries, %v", len(got), err)
	}
	got, err = s.Entries(ctx, custody.Query{Trace: "t3"})
	if err != nil || len(got) != 25 {
		t.Fatalf("Entries of trace t3 = %d, %v; want 25", len(got), err)
	}
}

func testCommitWritesEntryAndState(t *testing.T, s custody.Store) {
	ctx := context.Background()
	a := pending("ap-1", "t1", "d1")
	e, err := s.Commit(ctx, entry(custody.KindApprovalRequest, "t1"),
		custody.CreateApproval(a), custody.PutState("test", "k", json.RawMessage(`{"v":1}`)), custody.IncrState("test", "n", 2, 0))
	if err != nil || e.Seq != 1 {
		t.Fatalf("Commit = seq %d, %v", e.Seq, err)
	}
	got, err := s.Approval(ctx, "ap-1")
	if err != nil || got.Status != custody.ApprovalPending || got.Digest != "d1" {
		t.Fatalf("Approval = %+v, %v", got, err)
	}
	if doc, err := s.State(ctx, "test", "k"); err != nil || string(doc) != `{"v":1}` {
		t.Fatalf("State = %s, %v", doc, err)
	}
	if n, err := s.IncrState(ctx, "test", "n", 0); err != nil || n != 2 {
		t.Fatalf("counter = %d, %v; want 2", n, err)
	}
	// Changes apply in order, each seeing the ones before.
	if _, err := s.Commit(ctx, entry("test.kind", "t1"), custody.IncrState("test", "m", 1, 2), custody.IncrState("test", "m", 1, 2)); err != nil {
		t.Fatalf("two increments within the limit: %v", err)
	}
	if _, err := s.Commit(ctx, entry("test.kind", "t1"), custody.IncrState("test", "m", 1, 2)); kind(err) != custody.EDENIED {
		t.Fatalf("a third increment past the limit: %v, want EDENIED", err)
	}
}

func testFailedChangeWritesNothing(t *testing.T, s custody.Store) {
	ctx := context.Background()
	if _, err := s.Commit(ctx, entry(custody.KindApprovalRequest, "t1"), custody.CreateApproval(pending("ap-1", "t1", "d1"))); err != nil {
		t.Fatal(err)
	}
	refusal := custody.Errorf(custody.EDENIED, "not this time")
	tests := []struct {
		name    string
		changes []custody.Change
		want    string
	}{
		{"DuplicateApproval", []custody.Change{custody.PutState("test", "x", json.RawMessage(`1`)), custody.CreateApproval(pending("ap-1", "t1", "d1"))}, custody.ECONFLICT},
		{"WrongStatus", []custody.Change{custody.PutState("test", "x", json.RawMessage(`1`)), custody.UpdateApproval(pending("ap-1", "t1", "d1"), custody.ApprovalApproved)}, custody.ECONFLICT},
		{"ConsumePending", []custody.Change{custody.IncrState("test", "n", 1, 0), custody.ConsumeApproval("ap-1")}, custody.ECONFLICT},
		{"ConsumeUnknown", []custody.Change{custody.IncrState("test", "n", 1, 0), custody.ConsumeApproval("ap-none")}, custody.ENOTFOUND},
		{"PastLimit", []custody.Change{custody.PutState("test", "x", json.RawMessage(`1`)), custody.IncrState("test", "n", 5, 4)}, custody.EDENIED},
		{"Refusal", []custody.Change{custody.PutState("test", "x", json.RawMessage(`1`)), custody.ConsumeApproval("ap-1").Else(refusal)}, custody.EDENIED},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Commit(ctx, entry("test.kind", "t1"), tt.changes...)
			if kind(err) != tt.want {
				t.Fatalf("Commit: %v, want %s", err, tt.want)
			}
			if tt.name == "Refusal" && err.Error() != refusal.Error() {
				t.Fatalf("Commit: %v, want the change's refusal %v", err, refusal)
			}
			if n := size(t, s); n != 1 {
				t.Fatalf("ledger size %d after a failed commit, want 1", n)
			}
			if _, err := s.State(ctx, "test", "x"); kind(err) != custody.ENOTFOUND {
				t.Fatalf("state x after a failed commit: %v, want ENOTFOUND", err)
			}
			if doc, err := s.State(ctx, "test", "n"); kind(err) != custody.ENOTFOUND {
				t.Fatalf("state n after a failed commit: %s, %v, want ENOTFOUND", doc, err)
			}
			if a, err := s.Approval(ctx, "ap-1"); err != nil || a.Status != custody.ApprovalPending {
				t.Fatalf("approval after a failed commit: %+v, %v", a, err)
			}
		})
	}
	// The store goes on after refused commits.
	if e, err := s.Commit(ctx, entry("test.kind", "t1"), custody.PutState("test", "x", json.RawMessage(`2`))); err != nil || e.Seq != 2 {
		t.Fatalf("Commit after refusals = seq %d, %v; want 2", e.Seq, err)
	}
}

func testMalformedChange(t *testing.T, s custody.Store) {
	ctx := context.Background()
	for i, c := range []custody.Change{
		{Op: 99, NS: "test", Key: "k"},
		custody.PutState("test", "k", json.RawMessage(`{`)),
		custody.PutState("", "k", json.RawMessage(`1`)),
		custody.IncrState("test", "", 1, 0),
		custody.IncrState("test", "k", 1, -1),
		custody.CreateApproval(custody.Approval{}),
		custody.UpdateApproval(custody.Approval{ID: "ap-1", Status: custody.ApprovalApproved}, ""),
		custody.ConsumeApproval(""),
	} {
		if _, err := s.Commit(ctx, entry("test.kind", "t1"), c); kind(err) != custody.EINVALID {
			t.Errorf("change %d: %v, want EINVALID", i, err)
		}
	}
	if n := size(t, s); n != 0 {
		t.Fatalf("ledger size %d after malformed changes, want 0", n)
	}
}

// decide returns the change that decides the pending approval a.
func decide(a custody.Approval, status custody.ApprovalStatus, operator string) custody.Change {
	a.Status, a.Operator = status, operator
	at := t0.Add(time.Minute)
	a.DecidedAt = &at
	return custody.UpdateApproval(a, custody.ApprovalPending)
}

// race runs n commits at once and returns the errors.
func race(s custody.Store, n int, changes func(i int) []custody.Change) []error {
	ctx := context.Background()
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = s.Commit(ctx, entry("test.race", "t1"), changes(i)...)
		}()
	}
	close(start)
	wg.Wait()
	return errs
}

// oneWinner returns the index of the only nil error, failing unless every
// other error is of kind want.
func oneWinner(t *testing.T, errs []error, want string) int {
	t.Helper()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("commits %d and %d both won", winner, i)
		case err == nil:
			winner = i
		case kind(err) != want:
			t.Fatalf("commit %d: %v, want %s", i, err, want)
		}
	}
	if winner < 0 {
		t.Fatal("no commit won")
	}
	return winner
}

func testDecideOnce(t *testing.T, s custody.Store) {
	ctx := context.Background()
	a := pending("ap-1", "t1", "d1")
	if _, err := s.Commit(ctx, entry(custody.KindApprovalRequest, "t1"), custody.CreateApproval(a)); err != nil {
		t.Fatal(err)
	}
	const n = 16
	errs := race(s, n, func(i int) []custody.Change {
		status := custody.ApprovalApproved
		if i%2 == 1 {
			status = custody.ApprovalDeclined
		}
		return []custody.Change{decide(a, status, fmt.Sprint("op-", i))}
	})
	w := oneWinner(t, errs, custody.ECONFLICT)
	got, err := s.Approval(ctx, "ap-1")
	if err != nil || got.Operator != fmt.Sprint("op-", w) {
		t.Fatalf("approval = %+v, %v; want decided by op-%d", got, err, w)
	}
	if n := size(t, s); n != 2 {
		t.Fatalf("ledger size %d, want 2: the request and the one decision", n)
	}
}

func testConsumeOnce(t *testing.T, s custody.Store) {
	ctx := context.Background()
	a := pending("ap-1", "t1", "d1")
	if _, err := s.Commit(ctx, entry(custody.KindApprovalRequest, "t1"), custody.CreateApproval(a)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, entry(custody.KindApprovalDecided, "t1"), decide(a, custody.ApprovalApproved, "op-1")); err != nil {
		t.Fatal(err)
	}
	errs := race(s, 32, func(int) []custody.Change { return []custody.Change{custody.ConsumeApproval("ap-1")} })
	oneWinner(t, errs, custody.ECONFLICT)
	got, err := s.Approval(ctx, "ap-1")
	if err != nil || got.Status != custody.ApprovalConsumed {
		t.Fatalf("approval = %+v, %v; want consumed", got, err)
	}
	es, err := s.Entries(ctx, custody.Query{Kind: "test.race"})
	if err != nil || len(es) != 1 || es[0].Seq != got.ConsumedSeq {
		t.Fatalf("race entries = %d, %v; want the one that consumed it (seq %d)", len(es), err, got.ConsumedSeq)
	}
}

func testBudgetLimit(t *testing.T, s custody.Store) {
	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		if _, err := s.Commit(ctx, entry("test.kind", "t1"), custody.IncrState("budget", "t1/tool", 1, 3)); err != nil {
			t.Fatalf("call %d within the budget: %v", i, err)
		}
	}
	if _, err := s.Commit(ctx, entry("test.kind", "t1"), custody.IncrState("budget", "t1/tool", 1, 3)); kind(err) != custody.EDENIED {
		t.Fatalf("call past the budget: %v, want EDENIED", err)
	}
	if doc, err := s.State(ctx, "budget", "t1/tool"); err != nil || string(doc) != "3" {
		t.Fatalf("budget = %s, %v; want 3", doc, err)
	}
	// Adding 0 checks the limit and changes nothing: a count at the limit
	// passes, one past it does not, as the gateway's refusal-budget check
	// relies on.
	if _, err := s.Commit(ctx, entry("test.kind", "t1"), custody.IncrState("budget", "t1/tool", 0, 3)); err != nil {
		t.Fatalf("a check at the limit: %v", err)
	}
	if _, err := s.Commit(ctx, entry("test.kind", "t1"), custody.IncrState("budget", "t1/tool", 0, 2)); kind(err) != custody.EDENIED {
		t.Fatalf("a check past the limit: %v, want EDENIED", err)
	}
	if _, err := s.Commit(ctx, entry("test.kind", "t1"), custody.IncrState("budget", "t1/absent", 0, 1)); err != nil {
		t.Fatalf("a check of an absent counter: %v", err)
	}
	if doc, err := s.State(ctx, "budget", "t1/tool"); err != nil || string(doc) != "3" {
		t.Fatalf("budget after the checks = %s, %v; want 3", doc, err)
	}
	// Without a limit the counter goes on.
	if _, err := s.Commit(ctx, entry("test.kind", "t1"), custody.IncrState("budget", "t1/tool", 1, 0)); err != nil {
		t.Fatal(err)
	}
	if n := size(t, s); n != 6 {
		t.Fatalf("ledger size %d, want 6", n)
	}
}

func testBudgetUnderConcurrency(t *testing.T, s custody.Store) {
	errs := race(s, 24, func(int) []custody.Change { return []custody.Change{custody.IncrState("budget", "t1/tool", 1, 5)} })
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case kind(err) != custody.EDENIED:
			t.Fatalf("commit: %v, want EDENIED", err)
		}
	}
	if ok != 5 || size(t, s) != 5 {
		t.Fatalf("%d commits won, ledger size %d; want 5 and 5", ok, size(t, s))
	}
}

func testRefLookup(t *testing.T, s custody.Store) {
	ctx := context.Background()
	key := `["t1","vms.update","vms_update_id","u-1"]`
	if _, err := s.State(ctx, "ref", key); kind(err) != custody.ENOTFOUND {
		t.Fatalf("ref before it is recorded: %v, want ENOTFOUND", err)
	}
	if _, err := s.Commit(ctx, entry(custody.KindCallSucceeded, "t1"), custody.PutState("ref", key, json.RawMessage(`{"seq":1}`))); err != nil {
		t.Fatal(err)
	}
	if doc, err := s.State(ctx, "ref", key); err != nil || string(doc) != `{"seq":1}` {
		t.Fatalf("ref = %s, %v", doc, err)
	}
	if _, err := s.State(ctx, "ref", `["t2","vms.update","vms_update_id","u-1"]`); kind(err) != custody.ENOTFOUND {
		t.Fatalf("ref of another trace: %v, want ENOTFOUND", err)
	}
}

func testApprovalsByDigest(t *testing.T, s custody.Store) {
	ctx := context.Background()
	a1, a2, a3, a4 := pending("ap-1", "t1", "d1"), pending("ap-2", "t1", "d1"), pending("ap-3", "t1", "d2"), pending("ap-4", "t2", "d1")
	a2.CreatedAt = t0.Add(time.Second)
	for _, a := range []custody.Approval{a1, a2, a3, a4} {
		if _, err := s.Commit(ctx, entry(custody.KindApprovalRequest, a.Trace), custody.CreateApproval(a)); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(trace, digest string) string {
		as, err := s.ApprovalsFor(ctx, trace, digest)
		if err != nil {
			t.Fatalf("ApprovalsFor(%s, %s): %v", trace, digest, err)
		}
		out := ""
		for _, a := range as {
			out += a.ID + " "
		}
		return out
	}
	if got := ids("t1", "d1"); got != "ap-2 ap-1 " {
		t.Fatalf("approvals of t1/d1 = %q, want newest first ap-2 ap-1", got)
	}
	// An operator's edit rebinds ap-3 to d3: it is found by both digests.
	edited := a3
	edited.Digest, edited.Status = "d3", custody.ApprovalApproved
	if _, err := s.Commit(ctx, entry(custody.KindApprovalDecided, "t1"), custody.UpdateApproval(edited, custody.ApprovalPending)); err != nil {
		t.Fatal(err)
	}
	if got := ids("t1", "d3"); got != "ap-3 " {
		t.Fatalf("approvals of t1/d3 = %q, want ap-3", got)
	}
	if got := ids("t1", "d2"); got != "ap-3 " {
		t.Fatalf("approvals of t1/d2 = %q, want ap-3 (requested for d2)", got)
	}
	if got := ids("t3", "d1"); got != "" {
		t.Fatalf("approvals of t3/d1 = %q, want none", got)
	}
}

// testApprovalsByRequester: the approvals of one agent's action are found
// in every trace it asked in, newest first, through an operator's edit
// too, and never another agent's.
func testApprovalsByRequester(t *testing.T, s custody.Store) {
	ctx := context.Background()
	a1, a2, a3, other := pending("ap-1", "t1", "d1"), pending("ap-2", "t2", "d1"), pending("ap-3", "t3", "d2"), pending("ap-4", "t1", "d1")
	a2.CreatedAt = t0.Add(time.Second)
	other.Requester = "agent-2"
	for _, a := range []custody.Approval{a1, a2, a3, other} {
		if _, err := s.Commit(ctx, entry(custody.KindApprovalRequest, a.Trace), custody.CreateApproval(a)); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(requester, digest string) string {
		as, err := s.ApprovalsOf(ctx, requester, digest)
		if err != nil {
			t.Fatalf("ApprovalsOf(%s, %s): %v", requester, digest, err)
		}
		out := ""
		for _, a := range as {
			out += a.ID + " "
		}
		return out
	}
	if got := ids("agent-1", "d1"); got != "ap-2 ap-1 " {
		t.Fatalf("approvals of agent-1/d1 = %q, want newest first ap-2 ap-1, from both traces", got)
	}
	if got := ids("agent-2", "d1"); got != "ap-4 " {
		t.Fatalf("approvals of agent-2/d1 = %q, want ap-4 only", got)
	}
	edited := a3
	edited.Digest, edited.Status = "d3", custody.ApprovalApproved
	if _, err := s.Commit(ctx, entry(custody.KindApprovalDecided, "t3"), custody.UpdateApproval(edited, custody.ApprovalPending)); err != nil {
		t.Fatal(err)
	}
	if got := ids("agent-1", "d3") + "|" + ids("agent-1", "d2"); got != "ap-3 |ap-3 " {
		t.Fatalf("approvals of agent-1 by the edited and the requested digest = %q, want ap-3 by both", got)
	}
	if got := ids("agent-3", "d1"); got != "" {
		t.Fatalf("approvals of agent-3/d1 = %q, want none", got)
	}
}
