package mesh

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
)

func TestDiffText(t *testing.T) {
	tests := []struct {
		name, proposed, approved, want, inserted string
	}{
		{"Same", "a b c", "a b c", "", ""},
		{"SpacesOnly", "a  b\nc", "a b c", "", ""},
		{"Appended", "a b.", "a b. Evacuate now.", "a b. {+Evacuate now.+}", "Evacuate now."},
		{"Deleted", "a b c d", "a d", "a [-b c-] d", ""},
		{"Replaced", "a b c", "a x c", "a [-b-] {+x+} c", "x"},
		{"AllNew", "a b", "x y", "[-a b-] {+x y+}", "x y"},
		{"FromNothing", "", "x", "{+x+}", "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := diffText(tt.proposed, tt.approved)
			if e.String() != tt.want || e.inserted() != tt.inserted {
				t.Fatalf("diff = %q inserting %q, want %q inserting %q", e, e.inserted(), tt.want, tt.inserted)
			}
		})
	}
}

// pineValley is the operator's own order of the issue.
const pineValley = "Evacuate Pine Valley now."

// decisionOf returns the approval.decided entry of approval id, decoded.
func decisionOf(t *testing.T, env *testEnv, id string) (operator string, edited bool, o order) {
	t.Helper()
	es := env.entries(t, custody.KindApprovalDecided, map[string]string{RefApproval: id})
	if len(es) != 1 {
		t.Fatalf("%d decisions of %s on the ledger, want 1", len(es), id)
	}
	var body struct {
		Operator  string          `json:"operator_id"`
		Edited    bool            `json:"edited"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(es[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(body.Arguments, &o); err != nil {
		t.Fatal(err)
	}
	return body.Operator, body.Edited, o
}

// TestOperatorClaimBroadcast checks that a claim the operator writes in
// the desk's form is theirs to broadcast: the issue's "… Evacuate Pine
// Valley now." is published, and the decision entry records it as the
// operator's, with the edit from the proposed text to the approved one.
func TestOperatorClaimBroadcast(t *testing.T) {
	f := newDeskFixture(t)
	ctx := context.Background()
	id := f.critical.ApprovalRequestID
	text := f.critical.AggregationText + " " + pineValley
	b, err := f.desk.Approve(ctx, Form{ApprovalRequestID: id, OperatorID: "op-7", Audiences: []string{"ops_center"}, Text: text})
	if err != nil {
		t.Fatalf("the operator's own claim was refused: %v", err)
	}
	if b.BroadcastText != text || len(f.ops.Accepted()) != 1 {
		t.Fatalf("broadcast %q, %d delivered; want %q delivered", b.BroadcastText, len(f.ops.Accepted()), text)
	}
	operator, edited, o := decisionOf(t, f.env, id)
	want := strings.Join(strings.Fields(f.critical.AggregationText), " ") + " {+" + pineValley + "+}"
	if operator != "op-7" || !edited || o.BroadcastText != text || o.OperatorEdit != want {
		t.Fatalf("decision by %q (edited %v) of %+v, want op-7's edit %q", operator, edited, o, want)
	}
}

// TestOrderWithoutEditRecordsNone checks that an operator who keeps the
// proposed text records no edit.
func TestOrderWithoutEditRecordsNone(t *testing.T) {
	f := newDeskFixture(t)
	id := f.critical.ApprovalRequestID
	if _, err := f.desk.Approve(context.Background(), Form{ApprovalRequestID: id, OperatorID: "op-7", Audiences: []string{"ops_center"}}); err != nil {
		t.Fatal(err)
	}
	if _, _, o := decisionOf(t, f.env, id); o.OperatorEdit != "" {
		t.Fatalf("unchanged text recorded the edit %q", o.OperatorEdit)
	}
}

// TestClaimNotTheOperatorsRefused checks that a claim neither the
// aggregation holds nor the operator's recorded edit shows them writing
// is still refused when the approved order is published: an order whose
// text was changed without the change being recorded as the operator's,
// or whose record is of other words than its text carries.
func TestClaimNotTheOperatorsRefused(t *testing.T) {
	tests := []struct {
		name string
		edit func(agg string) order
	}{
		{"ChangedWithoutRecord", func(agg string) order {
			return order{BroadcastText: agg + " " + pineValley}
		}},
		{"RecordOfOtherWords", func(agg string) order {
			return order{BroadcastText: agg + " " + pineValley, OperatorEdit: diffText(agg, agg+" Stay alert.").String()}
		}},
		{"RecordOfPartOfTheClaims", func(agg string) order {
			return order{BroadcastText: agg + " " + pineValley + " Fire spreading east.", OperatorEdit: diffText(agg, agg+" "+pineValley).String()}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newDeskFixture(t)
			ctx := context.Background()
			id := f.critical.ApprovalRequestID
			o := tt.edit(f.critical.AggregationText)
			o.SeverityTier, o.TargetAudience = Emergency, "ops_center"
			args, err := marshal(o)
			if err != nil {
				t.Fatal(err)
			}
			// Decided past the desk's check (no validator), as any edit
			// that reaches the approval store might be.
			if _, err := f.env.approvals.Decide(ctx, id, approval.Decision{Decision: approval.Approve, Operator: "op-7", Arguments: args}); err != nil {
				t.Fatal(err)
			}
			if _, err := f.desk.Publish(ctx, id); custody.ErrorKind(err) != custody.EINVALID {
				t.Fatalf("publish: %v, want invalid", err)
			}
			if len(f.ops.Accepted()) != 0 || len(f.env.entries(t, EntryBroadcastStarted, nil)) != 0 {
				t.Fatal("a claim not the operator's was broadcast")
			}
			if c, _ := f.desk.Case(id); c.Status != CaseRefused {
				t.Fatalf("case %s, want refused", c.Status)
			}
		})
	}
}

// TestConsoleOperatorClaim checks an operator's own claim decided outside
// the desk's form (the console inbox, the API): without its edit recorded
// the approval validator refuses it and says how to record it; with the
// edit recorded it is approved and published.
func TestConsoleOperatorClaim(t *testing.T) {
	f := newDeskFixture(t)
	ctx := context.Background()
	svc, err := approval.New(approval.Config{Store: f.env.db, Ledger: f.env.db, Now: f.env.clock.Now, Validate: f.desk.CheckApproval})
	if err != nil {
		t.Fatal(err)
	}
	id, agg := f.critical.ApprovalRequestID, f.critical.AggregationText
	o := order{BroadcastText: agg + " " + pineValley, SeverityTier: Emergency, TargetAudience: "ops_center"}
	args, _ := marshal(o)
	_, err = svc.Decide(ctx, id, approval.Decision{Decision: approval.Approve, Operator: "op-7", Arguments: args})
	edit := diffText(agg, o.BroadcastText).String()
	if custody.ErrorKind(err) != custody.EINVALID || !strings.Contains(custody.ErrorMessage(err), "operator_edit") {
		t.Fatalf("unrecorded claim decided: %v, want invalid naming operator_edit", err)
	}
	o.OperatorEdit = edit
	args, _ = marshal(o)
	if _, err := svc.Decide(ctx, id, approval.Decision{Decision: approval.Approve, Operator: "op-7", Arguments: args}); err != nil {
		t.Fatalf("recorded claim: %v", err)
	}
	if b, err := f.desk.Publish(ctx, id); err != nil || b.BroadcastText != o.BroadcastText {
		t.Fatalf("publish: %+v, %v", b, err)
	}
}
