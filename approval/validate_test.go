package approval_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
)

// validated is a fixture whose service asks validate about every approval.
func validated(t *testing.T, validate func(context.Context, custody.Approval) error) *fixture {
	t.Helper()
	f := newFixture(t)
	svc, err := approval.New(approval.Config{Store: f.db, Ledger: f.db, Now: f.clk.Now, Validate: validate})
	if err != nil {
		t.Fatal(err)
	}
	f.svc = svc
	return f
}

// TestDecideValidates: the validator sees the arguments as approved; its
// refusal is the decision's, as invalid with the violations, and nothing
// is recorded; a store failure stays unavailable; a decline is not
// validated.
func TestDecideValidates(t *testing.T) {
	var seen []string
	refusal := &custody.Error{Kind: custody.EDENIED, Message: "no", Violations: []custody.Violation{{Instance: "/message", Message: "no"}}}
	f := validated(t, func(_ context.Context, a custody.Approval) error {
		seen = append(seen, string(a.Arguments))
		return refusal
	})
	ctx := context.Background()
	a := f.request(t, approval.Request{})
	before := f.size(t)
	edited := json.RawMessage(`{"channel":"ops","message":"DEPLOY AT 6"}`)
	_, err := f.svc.Decide(ctx, a.ID, approval.Decision{Decision: approval.Approve, Operator: "op-1", Arguments: edited})
	wantKind(t, err, custody.EINVALID)
	if ce := custody.AsError(err); len(ce.Violations) != 1 || ce.Violations[0].Instance != "/message" || ce.ApprovalRequestID != a.ID {
		t.Fatalf("refusal %+v, want the validator's violation and the approval id", ce)
	}
	if len(seen) != 1 || seen[0] != string(edited) {
		t.Fatalf("validator saw %q, want the edited arguments", seen)
	}
	if f.size(t) != before {
		t.Fatal("a refused decision was recorded")
	}
	if _, err := f.svc.Decide(ctx, a.ID, approval.Decision{Decision: approval.Decline, Operator: "op-1"}); err != nil {
		t.Fatalf("decline: %v", err)
	}
	if len(seen) != 1 {
		t.Fatal("a decline was validated")
	}

	down := validated(t, func(context.Context, custody.Approval) error {
		return &custody.Error{Kind: custody.EUNAVAILABLE, Message: "state store unavailable"}
	})
	b := down.request(t, approval.Request{})
	_, err = down.svc.Decide(ctx, b.ID, approval.Decision{Decision: approval.Approve, Operator: "op-1"})
	wantKind(t, err, custody.EUNAVAILABLE)
	if got, _ := down.svc.Get(ctx, b.ID); got.Status != custody.ApprovalPending {
		t.Fatalf("approval %s after a failed check, want pending", got.Status)
	}
}

// TestDecideWithoutContract: an action the validator has no contract for
// may be approved as asked, never edited.
func TestDecideWithoutContract(t *testing.T) {
	f := validated(t, func(_ context.Context, a custody.Approval) error {
		return fmt.Errorf("tool %s: %w", a.Tool, approval.ErrNoContract)
	})
	ctx := context.Background()
	a := f.request(t, approval.Request{})
	_, err := f.svc.Decide(ctx, a.ID, approval.Decision{Decision: approval.Approve, Operator: "op-1", Arguments: json.RawMessage(`{"channel":"ops","message":"X"}`)})
	wantKind(t, err, custody.EINVALID)
	if !errors.Is(err, approval.ErrNoContract) {
		t.Fatalf("refusal %v does not wrap ErrNoContract", err)
	}
	if _, err := f.svc.Decide(ctx, a.ID, approval.Decision{Decision: approval.Approve, Operator: "op-1"}); err != nil {
		t.Fatalf("unedited: %v", err)
	}
}
