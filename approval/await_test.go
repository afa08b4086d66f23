package approval_test

import (
	"context"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
)

// TestAwait: a waiter wakes on the store's change notification when there
// is one (its poll is an hour here, so nothing else could wake it), and
// on its poll when the decision comes from where no notification does (a
// service deciding without telling, as another process on SQLite).
func TestAwait(t *testing.T) {
	for _, tt := range []struct {
		name   string
		config func(f *fixture) approval.Config
	}{
		{"Notified", func(f *fixture) approval.Config {
			return approval.Config{Store: f.db, Ledger: f.db, Now: f.clk.Now, Changes: f.db.ApprovalChanges, Poll: time.Hour}
		}},
		{"Polled", func(f *fixture) approval.Config {
			return approval.Config{Store: f.db, Ledger: f.db, Now: f.clk.Now, Poll: time.Millisecond}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			waiter, err := approval.New(tt.config(f))
			if err != nil {
				t.Fatal(err)
			}
			a, err := f.svc.Request(context.Background(), approval.Request{Tool: "post_announcement", Args: postArgs, Trace: "t1", Requester: "agent-1"})
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan custody.Approval, 1)
			watching := waiter.Watch(t.Context(), a.ID) // subscribed before the decision
			go func() {
				d, err := waiter.Await(t.Context(), a.ID)
				if err != nil {
					t.Errorf("Await: %v", err)
				}
				got <- d
			}()
			if _, err := f.svc.Decide(context.Background(), a.ID, approval.Decision{Decision: approval.Approve, Operator: "op-1"}); err != nil {
				t.Fatal(err)
			}
			select {
			case d := <-got:
				if d.Status != custody.ApprovalApproved {
					t.Fatalf("Await returned %s, want approved", d.Status)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Await did not wake on the decision")
			}
			select {
			case <-watching:
			case <-time.After(30 * time.Second):
				t.Fatal("Watch did not tell of the decision")
			}
		})
	}
}

// TestAwaitEnds: Await returns ctx's error, with the approval as last
// read, once ctx ends before a decision.
func TestAwaitEnds(t *testing.T) {
	f := newFixture(t)
	a, err := f.svc.Request(context.Background(), approval.Request{Tool: "post_announcement", Args: postArgs, Trace: "t1", Requester: "agent-1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got, err := f.svc.Await(ctx, a.ID); err != context.Canceled || got.Status != custody.ApprovalPending {
		t.Fatalf("Await on an ended ctx = %s, %v; want pending, context.Canceled", got.Status, err)
	}
}
