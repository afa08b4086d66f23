package gate_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
)

const broadcastArgs = `{"message":"SNOW AHEAD","tier":"warning"}`

// TestEditRefusedAtDecision holds the operator's edit to what the call
// will be held to: the input contract (pattern, enum) and the policy's
// narrowing of it. A refused edit leaves the approval pending, writes
// nothing, and says where the arguments are wrong.
func TestEditRefusedAtDecision(t *testing.T) {
	for _, tc := range []struct {
		name, args, instance string
	}{
		{"LowercaseText", `{"message":"snow ahead","tier":"warning"}`, "/message"},
		{"OutOfEnum", `{"message":"SNOW AHEAD","tier":"info"}`, "/tier"},
		{"PolicyNarrowsEnum", `{"message":"SNOW AHEAD","tier":"emergency"}`, "/tier"},
		{"PolicyNarrowsLength", `{"message":"SNOW AND ICE AHEAD SLOW DOWN NOW","tier":"warning"}`, "/message"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			ctx := context.Background()
			id := h.pending(t, "trace-e", "broadcast", broadcastArgs)
			before := h.size(t)
			_, err := h.svc.Decide(ctx, id, approval.Decision{Decision: approval.Approve, Operator: "op-1", Arguments: json.RawMessage(tc.args)})
			ce := wantKind(t, err, custody.EINVALID)
			if !hasViolationAt(ce, tc.instance) {
				t.Fatalf("violations %+v name no %s", ce.Violations, tc.instance)
			}
			if ce.ApprovalRequestID != id {
				t.Fatalf("refusal names approval %q, want %s", ce.ApprovalRequestID, id)
			}
			a, err := h.svc.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if a.Status != custody.ApprovalPending || string(a.Arguments) != broadcastArgs {
				t.Fatalf("after a refused edit the approval is %s with %s, want pending and unchanged", a.Status, a.Arguments)
			}
			if after := h.size(t); after != before {
				t.Fatalf("a refused edit wrote %d entries", after-before)
			}
		})
	}
}

// TestValidEditApprovedAndRuns: an edit that passes is approved and the
// edited action then runs, once.
func TestValidEditApprovedAndRuns(t *testing.T) {
	h := newHarness(t)
	id := h.pending(t, "trace-v", "broadcast", broadcastArgs)
	edited := `{"message":"SNOW AND ICE AHEAD","tier":"critical"}`
	a := h.decide(t, id, approval.Approve, json.RawMessage(edited))
	if a.Status != custody.ApprovalApproved || string(a.Arguments) != edited {
		t.Fatalf("decided %+v", a)
	}
	if _, err := h.call("trace-v", "broadcast", `{"message":"SNOW AND ICE AHEAD","tier":"critical","approval_request_id":"`+id+`"}`); err != nil {
		t.Fatalf("the approved edit did not run: %v", err)
	}
	if h.ran("broadcast") != 1 {
		t.Fatalf("broadcast ran %d times, want 1", h.ran("broadcast"))
	}
}

// TestCheckApprovalScope refuses an approval whose resource another trace
// owns, and claims nothing for one nobody owns.
func TestCheckApprovalScope(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	if _, err := h.call("trace-owner", "chart", `{"patient_id":"P-1"}`); err != nil {
		t.Fatal(err)
	}
	err := h.gw.CheckApproval(ctx, custody.Approval{ID: "a", Tool: "chart", Trace: "trace-other", Arguments: json.RawMessage(`{"patient_id":"P-1"}`)})
	if !hasViolationAt(wantKind(t, err, custody.EDENIED), "/patient_id") {
		t.Fatalf("scope refusal %v names no /patient_id", err)
	}
	if err := h.gw.CheckApproval(ctx, custody.Approval{ID: "a", Tool: "chart", Trace: "trace-other", Arguments: json.RawMessage(`{"patient_id":"P-2"}`)}); err != nil {
		t.Fatalf("unowned resource: %v", err)
	}
	if _, err := h.call("trace-third", "chart", `{"patient_id":"P-2"}`); err != nil {
		t.Fatalf("the check claimed P-2: %v", err)
	}
	err = h.gw.CheckApproval(ctx, custody.Approval{ID: "a", Tool: "chart", Trace: "trace-other", Arguments: json.RawMessage(`{"patient_id":["P-1"]}`)})
	if !hasViolationAt(wantKind(t, err, custody.EINVALID), "/patient_id") {
		t.Fatalf("a resource that is not a string or number: %v names no /patient_id", err)
	}
}

// TestCheckApprovalUnknownTool: a tool outside the envelope has no
// contract here. Approving it as asked is allowed; editing it is refused.
func TestCheckApprovalUnknownTool(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	req := func() string {
		a, err := h.svc.Request(ctx, approval.Request{Tool: "elsewhere", Args: json.RawMessage(`{"m":"A"}`), Trace: "t-u", Requester: "x", Editable: []string{"m"}})
		if err != nil {
			t.Fatal(err)
		}
		return a.ID
	}
	_, err := h.svc.Decide(ctx, req(), approval.Decision{Decision: approval.Approve, Operator: "op-1", Arguments: json.RawMessage(`{"m":"B"}`)})
	wantKind(t, err, custody.EINVALID)
	if _, err := h.svc.Decide(ctx, req(), approval.Decision{Decision: approval.Approve, Operator: "op-1"}); err != nil {
		t.Fatalf("unedited approval of a tool without a contract here: %v", err)
	}
}

func hasViolationAt(ce *custody.Error, instance string) bool {
	for _, v := range ce.Violations {
		if v.Instance == instance {
			return true
		}
	}
	return false
}

// size returns the ledger's size.
func (h *harness) size(t testing.TB) int64 {
	t.Helper()
	r, err := h.db.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return r.Seq
}

// TestCheckApprovalAgentNotAllowed: an approval is refused when the agent
// that asked for it may no longer call the tool, since its call would be
// denied.
func TestCheckApprovalAgentNotAllowed(t *testing.T) {
	allow := true
	h := newHarnessWith(t, harnessOptions{dir: t.TempDir(), allowed: func(actor, tool string) bool { return allow || tool != "broadcast" }})
	id := h.pending(t, "trace-a", "broadcast", broadcastArgs)
	allow = false
	_, err := h.svc.Decide(context.Background(), id, approval.Decision{Decision: approval.Approve, Operator: "op-1"})
	wantKind(t, err, custody.EINVALID)
}
