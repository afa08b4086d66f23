package mesh

import (
	"context"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
)

// TestDecisionChecksOrder: a broadcast order decided outside the desk's
// form (the API, the CLI) is held to the desk's rules by the approval
// service's validator: an info tier or an unknown audience is refused at
// decision time and the approval stays pending; a valid order is approved
// and published.
func TestDecisionChecksOrder(t *testing.T) {
	f := newDeskFixture(t)
	ctx := context.Background()
	svc, err := approval.New(approval.Config{Store: f.env.db, Ledger: f.env.db, Now: f.env.clock.Now, Validate: f.desk.CheckApproval})
	if err != nil {
		t.Fatal(err)
	}
	id := f.critical.ApprovalRequestID
	for _, o := range []order{
		{BroadcastText: f.critical.AggregationText, SeverityTier: Info, TargetAudience: "ops_center"},
		{BroadcastText: f.critical.AggregationText, SeverityTier: Emergency, TargetAudience: "mars_base"},
	} {
		args, err := marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		_, err = svc.Decide(ctx, id, approval.Decision{Decision: approval.Approve, Operator: "op-7", Arguments: args})
		if custody.ErrorKind(err) != custody.EINVALID {
			t.Fatalf("order %+v decided: %v, want invalid", o, err)
		}
	}
	if a, err := svc.Get(ctx, id); err != nil || a.Status != custody.ApprovalPending {
		t.Fatalf("after refused orders: %+v %v, want pending", a, err)
	}
	args, err := marshal(order{BroadcastText: f.critical.AggregationText, SeverityTier: Emergency, TargetAudience: "ops_center"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Decide(ctx, id, approval.Decision{Decision: approval.Approve, Operator: "op-7", Arguments: args}); err != nil {
		t.Fatalf("valid order: %v", err)
	}
	if _, err := f.desk.Publish(ctx, id); err != nil {
		t.Fatalf("the approved order was not published: %v", err)
	}
}
