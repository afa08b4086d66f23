package sqlite_test

import (
	"context"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/store/sqlite"
)

// TestApprovalChanges: a commit that creates, decides or uses an approval
// tells every open stream its id; other commits tell nothing, and a
// stream closes when its context ends.
func TestApprovalChanges(t *testing.T) {
	db, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithCancel(context.Background())
	ids, err := db.ApprovalChanges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	a := custody.Approval{ID: "ap-1", Status: custody.ApprovalPending, Tool: "t", Digest: "d", Trace: "tr", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	entry := func() custody.Entry { return custody.Entry{Kind: "test.kind", Trace: "tr", Body: []byte(`{}`)} }
	if _, err := db.Commit(context.Background(), entry(), custody.PutState("ns", "k", []byte(`1`))); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Commit(context.Background(), entry(), custody.CreateApproval(a)); err != nil {
		t.Fatal(err)
	}
	approved := a
	approved.Status = custody.ApprovalApproved
	if _, err := db.Commit(context.Background(), entry(), custody.UpdateApproval(approved, custody.ApprovalPending)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Commit(context.Background(), entry(), custody.ConsumeApproval("ap-1")); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if got := <-ids; got != "ap-1" {
			t.Fatalf("event %d names %q", i, got)
		}
	}
	select {
	case got := <-ids:
		t.Fatalf("an extra event %q", got)
	default:
	}
	cancel()
	for range ids {
	}
}
