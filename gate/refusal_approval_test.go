package gate_test

import (
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/gate"
)

// TestRefusalBudgetYieldsToApproval: a trace that spent its refusal budget
// of a tool is still denied every probe of it, one citing an approval for
// other arguments included, with a denial whose violation names the
// budget; the call an operator approved runs, once.
func TestRefusalBudgetYieldsToApproval(t *testing.T) {
	h := newHarness(t)
	const action = `{"message":"SLOW DOWN"}`
	id := h.pending(t, "trace-a", "sign_once", action) // the ask counts
	h.decide(t, id, approval.Approve, nil)
	for range gate.DefaultMaxRefusalsPerTrace - 1 {
		_, err := h.call("trace-a", "sign_once", `{"message":"SLOW DOWN","approval_request_id":"8d4f8a70-3c1a-4f57-a8a4-1c2b3d4e5f60"}`)
		wantKind(t, err, custody.EDENIED)
	}
	for name, args := range map[string]string{
		"Dangling":      `{"message":"SLOW DOWN","approval_request_id":"8d4f8a70-3c1a-4f57-a8a4-1c2b3d4e5f60"}`,
		"OtherAction":   `{"message":"SPEED UP","approval_request_id":"` + id + `"}`,
		"ExtraArgument": `{"message":"SLOW DOWN","approval_request_id":"` + id + `","x":1}`,
	} {
		_, err := h.call("trace-a", "sign_once", args)
		ce := wantKind(t, err, custody.EDENIED)
		if len(ce.Violations) != 1 || ce.Violations[0].Keyword != "maximum_refusals_per_trace" {
			t.Fatalf("%s: denial %q, violations %+v: want the refusal budget named", name, ce.Message, ce.Violations)
		}
	}
	if _, err := h.call("trace-a", "sign_once", `{"message":"SLOW DOWN","approval_request_id":"`+id+`"}`); err != nil {
		t.Fatalf("the approved call was refused after the refusal budget was spent: %v", err)
	}
	if h.ran("sign_once") != 1 {
		t.Fatalf("sign_once ran %d times, want 1", h.ran("sign_once"))
	}
	_, err := h.call("trace-a", "sign_once", `{"message":"SLOW DOWN","approval_request_id":"`+id+`"}`)
	if ce := wantKind(t, err, custody.EDENIED); len(ce.Violations) != 1 || ce.Violations[0].Keyword != "maximum_refusals_per_trace" {
		t.Fatalf("a used approval passed the spent refusal budget: %q", ce.Message)
	}
}
