package approval_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
)

// TestClientDecision: a decision taken by the user of an MCP client goes
// through Decide like any other, as client:AGENT with the client named on
// the approval.decided entry; the two kinds of decider never pass for
// each other, and the client's decides the call as it stands.
func TestClientDecision(t *testing.T) {
	ctx := context.Background()
	client := &approval.DecidingClient{Name: "claude-code", Version: "2.1.0"}
	t.Run("Recorded", func(t *testing.T) {
		f := newFixture(t)
		a := f.request(t, approval.Request{Requester: "agent-1"})
		got, err := f.svc.Decide(ctx, a.ID, approval.Decision{Decision: approval.Approve, Operator: approval.ClientDecider("agent-1"), Client: client})
		if err != nil || got.Status != custody.ApprovalApproved || got.Operator != "client:agent-1" {
			t.Fatalf("decide: %+v, %v", got, err)
		}
		es := f.entries(t, custody.KindApprovalDecided)
		var body struct {
			Operator string                   `json:"operator_id"`
			Client   *approval.DecidingClient `json:"client"`
		}
		if len(es) != 1 || json.Unmarshal(es[0].Body, &body) != nil {
			t.Fatalf("approval.decided entries: %+v", es)
		}
		if es[0].Actor != "client:agent-1" || body.Operator != "client:agent-1" || body.Client == nil || *body.Client != *client {
			t.Fatalf("approval.decided by %q: %s", es[0].Actor, es[0].Body)
		}
	})
	t.Run("OperatorsNameNoClient", func(t *testing.T) {
		f := newFixture(t)
		a := f.request(t, approval.Request{Requester: "agent-1"})
		if _, err := f.svc.Decide(ctx, a.ID, approval.Decision{Decision: approval.Approve, Operator: "op-1"}); err != nil {
			t.Fatal(err)
		}
		if body := string(f.entries(t, custody.KindApprovalDecided)[0].Body); strings.Contains(body, `"client"`) {
			t.Fatalf("an operator's decision names a client: %s", body)
		}
	})
	for _, tc := range []struct {
		name string
		d    approval.Decision
	}{
		{"ErrClientWithoutName", approval.Decision{Decision: approval.Approve, Operator: "client:agent-1"}},
		{"ErrOperatorNamingAClient", approval.Decision{Decision: approval.Approve, Operator: "op-1", Client: client}},
		{"ErrNoAgent", approval.Decision{Decision: approval.Approve, Operator: "client:", Client: client}},
		{"ErrClientEdits", approval.Decision{Decision: approval.Approve, Operator: "client:agent-1", Client: client,
			Arguments: json.RawMessage(`{"channel":"ops","message":"DEPLOY AT 6"}`)}},
		{"ErrClientGrants", approval.Decision{Decision: approval.Approve, Operator: "client:agent-1", Client: client,
			Grant: &approval.GrantTerms{MaxUses: 3}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			a := f.request(t, approval.Request{Requester: "agent-1"})
			before := f.size(t)
			_, err := f.svc.Decide(ctx, a.ID, tc.d)
			wantKind(t, err, custody.EINVALID)
			if f.size(t) != before {
				t.Fatal("a refused decision wrote to the ledger")
			}
		})
	}
}
