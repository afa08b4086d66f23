package peas_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/systems/llm"
	"github.com/custody-dev/custody/systems/peas"
)

// TestApprovalOutlivesRefusalBudget: ten refused issue_vms_update calls
// spend the trace's refusal budget; the operator's approval still posts
// the sign, and the console tells the operator the budget was spent.
func TestApprovalOutlivesRefusalBudget(t *testing.T) {
	s := newStack(t, llm.Router{Main: probesOnce{}, Edge: llm.Template{}})
	ctx := context.Background()
	ch := s.pending(t)
	s.decide(t, ch.ApprovalID, approval.Approve, nil)
	probe := `{"approval_request_id":"` + ch.ApprovalID + `","billboard_id":"` + sign + `","message":"ALL CLEAR","duration_s":1800}`
	for range gate.DefaultMaxRefusalsPerTrace {
		_, err := s.call(ch.Trace, peas.ToolVMS, probe)
		s.refusedOnLedger(t, err, custody.EDENIED)
	}
	if err := s.sys.Continue(ctx, s.gw, ch); err != nil {
		t.Fatal(err)
	}
	if ch.Stage != peas.StageNotified || ch.VMSUpdateID == "" {
		t.Fatalf("stage %q (final %q, refusal %+v), want notified", ch.Stage, ch.Final, ch.Refusal)
	}
	s.signShows(t, proposed)
	snap, err := s.sys.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range snap.Corridors {
		if c.LocationID == location && (c.Chain == nil || !slices.Contains(c.Chain.RefusalBudgets, peas.ToolVMS)) {
			t.Fatalf("the console does not say issue_vms_update's refusal budget was spent: %+v", c.Chain)
		}
	}
}

// probesOnce is the planner probing issue_vms_update once with a message
// the operator did not approve before it carries on.
type probesOnce struct{}

func (probesOnce) Name() string { return "probes-once" }

func (probesOnce) Chat(ctx context.Context, r llm.Request) (llm.Response, error) {
	var args string
	var rest []llm.Message
	probed := false
	for _, m := range r.Messages {
		if i := strings.Index(m.Content, "ARGS "); m.Role == llm.RoleUser && i >= 0 {
			args = strings.SplitN(m.Content[i+len("ARGS "):], "\n", 2)[0]
		}
		isProbe := m.ToolCallID == "probe" || len(m.ToolCalls) == 1 && m.ToolCalls[0].ID == "probe"
		probed = probed || isProbe
		if !isProbe {
			rest = append(rest, m)
		}
	}
	if args != "" && !probed {
		probe := strings.Replace(args, proposed, "ALL CLEAR", 1)
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "probe", Name: peas.ToolVMS, Arguments: []byte(probe)}}}}, nil
	}
	r.Messages = rest
	return peas.Planner{}.Chat(ctx, r)
}
