package postgres

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/store/postgres/pgtest"
)

func TestApprovalIDs(t *testing.T) {
	changes := []custody.Change{
		custody.PutState("test", "k", nil),
		custody.CreateApproval(custody.Approval{ID: "a"}),
		custody.IncrState("budget", "k", 1, 0),
		custody.UpdateApproval(custody.Approval{ID: "b"}, custody.ApprovalPending),
		custody.ConsumeApproval("c"),
	}
	if got := approvalIDs(changes); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("approvalIDs = %v, want a b c", got)
	}
	if got := approvalIDs(changes[:1]); got != nil {
		t.Fatalf("approvalIDs of state alone = %v, want none", got)
	}
}

// TestApprovalChangesOnlyCommitted: a refused change of an approval is
// not notified; the next committed one is, and the use of one too. The
// listener on another schema hears nothing of this one.
func TestApprovalChangesOnlyCommitted(t *testing.T) {
	url := pgtest.URL(t)
	key := filepath.Join(t.TempDir(), "signing.key")
	a, b := open(t, url, Options{KeyFile: key}), open(t, url, Options{KeyFile: key})
	elsewhere := open(t, pgtest.URL(t), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ids, err := b.ApprovalChanges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other, err := elsewhere.ApprovalChanges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Commit(ctx, entry("test.kind", "t1"), custody.ConsumeApproval("ap-missing")); custody.ErrorKind(err) != custody.ENOTFOUND {
		t.Fatalf("use of a missing approval: %v", err)
	}
	ap := approvalOf("ap-1", "t1")
	ap.Status = custody.ApprovalApproved
	if _, err := a.Commit(ctx, entry("test.kind", "t1"), custody.CreateApproval(ap)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Commit(ctx, entry("test.kind", "t1"), custody.ConsumeApproval("ap-1")); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		select {
		case id := <-ids:
			if id != "ap-1" {
				t.Fatalf("notification %d names %q, want ap-1 (the refused change is not notified)", i, id)
			}
		case <-time.After(time.Minute):
			t.Fatalf("notification %d did not come", i)
		}
	}
	// A notification of this schema would have reached the other listener
	// before its Commit's own; it hears only that one.
	if _, err := elsewhere.Commit(ctx, entry("test.kind", "t1"), custody.CreateApproval(approvalOf("ap-other", "t1"))); err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-other:
		if id != "ap-other" {
			t.Fatalf("the other schema's listener heard %q", id)
		}
	case <-time.After(time.Minute):
		t.Fatal("the other schema's notification did not come")
	}
	cancel()
	for range ids { // closed once ctx ends
	}
}

// TestApprovalChangesClosed: listening on a closed store fails.
func TestApprovalChangesClosed(t *testing.T) {
	db := open(t, pgtest.URL(t), Options{})
	db.Close()
	_, err := db.ApprovalChanges(context.Background())
	wantKind(t, "ApprovalChanges on a closed store", err, custody.EUNAVAILABLE)
}
