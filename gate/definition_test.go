package gate_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/example"
	"github.com/custody-dev/custody/gate"
)

// TestRepinVoidsApprovals replays the re-pin attack: an approval granted
// while a tool had definition v1 must not run the tool once it is pinned
// to v2, whether the call cites the approval or finds it by its action;
// a new request is asked for, under v2, and the call that runs names v2.
func TestRepinVoidsApprovals(t *testing.T) {
	h := newHarness(t)
	var definition atomic.Value
	definition.Store("v1-sha256")
	var runs atomic.Int64
	sign := spec("sign_remote", custody.Write)
	sign.Effect, sign.Approval = custody.EffectConsequential, custody.HumanConfirmation
	sign.Links = []custody.Link{{Arg: "/approval_request_id", Approval: true}}
	tool := gate.Tool{Spec: sign,
		Handler: func(context.Context, custody.Call) (json.RawMessage, error) {
			runs.Add(1)
			return json.RawMessage(`{"ok":true}`), nil
		},
		Refs: func() map[string]string {
			return map[string]string{custody.RefToolDefinition: definition.Load().(string)}
		}}
	gw, err := gate.New(gate.Config{Registry: h.reg, Ledger: h.db, Approvals: h.svc, State: h.db, Now: h.clk.Now, Logger: discard()},
		example.EnvelopeID, []gate.Tool{tool})
	if err != nil {
		t.Fatal(err)
	}
	call := func(args string) error {
		_, err := gw.Call(context.Background(), custody.Call{Trace: "t-repin", Tool: "sign_remote", Args: json.RawMessage(args), Actor: "agent-1", Via: "test"})
		return err
	}
	// Asked and approved under v1.
	v1 := wantKind(t, call(`{"s":"x"}`), custody.EPENDING).ApprovalRequestID
	if a, _ := h.svc.Get(context.Background(), v1); a.Definition != "v1-sha256" {
		t.Fatalf("the request is bound to definition %q, want v1-sha256", a.Definition)
	}
	h.decide(t, v1, approval.Approve, nil)

	// The server changes the tool; an operator re-pins it to v2.
	definition.Store("v2-sha256")
	ce := wantKind(t, call(`{"s":"x","approval_request_id":"`+v1+`"}`), custody.EDENIED)
	if ce.ApprovalRequestID != v1 {
		t.Errorf("the refusal names %q, want %s", ce.ApprovalRequestID, v1)
	}
	v2 := wantKind(t, call(`{"s":"x"}`), custody.EPENDING).ApprovalRequestID
	if v2 == v1 || runs.Load() != 0 {
		t.Fatalf("after the re-pin: request %s (the v1 one is %s), %d runs; want a new request and no run", v2, v1, runs.Load())
	}
	if a, _ := h.svc.Get(context.Background(), v1); a.Status != custody.ApprovalApproved || a.ConsumedSeq != 0 {
		t.Errorf("the v1 approval was used: %+v", a)
	}

	// Approved under v2, it runs, and its entries name v2.
	h.decide(t, v2, approval.Approve, nil)
	res, err := gw.Call(context.Background(), custody.Call{Trace: "t-repin", Tool: "sign_remote", Args: json.RawMessage(`{"s":"x"}`), Actor: "agent-1", Via: "test"})
	if err != nil || runs.Load() != 1 {
		t.Fatalf("the v2 approval: %v, %d runs", err, runs.Load())
	}
	if e := h.entry(t, res.Receipt.Seq); e.Refs[custody.RefToolDefinition] != "v2-sha256" || e.Refs[approval.RefApproval] != v2 {
		t.Errorf("the call's entry names %v", e.Refs)
	}
	h.verify(t)
}
