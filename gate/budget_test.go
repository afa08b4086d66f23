package gate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/gate"
)

// TestRefusedCallsDoNotSpendBudget: a tool that may be called once per
// trace still runs once after a malformed call (a dangling approval link)
// and a held one: only calls that ran count against its calls budget.
func TestRefusedCallsDoNotSpendBudget(t *testing.T) {
	h := newHarness(t)
	_, err := h.call("trace-once", "sign_once", `{"message":"SLOW DOWN","approval_request_id":"8d4f8a70-3c1a-4f57-a8a4-1c2b3d4e5f60"}`)
	h.wantRefused(t, err, custody.EDENIED)
	id := h.pending(t, "trace-once", "sign_once", `{"message":"SLOW DOWN"}`)
	h.pending(t, "trace-once", "sign_once", `{"message":"SLOW DOWN"}`)
	h.decide(t, id, approval.Approve, nil)
	if _, err := h.call("trace-once", "sign_once", `{"message":"SLOW DOWN","approval_request_id":"`+id+`"}`); err != nil {
		t.Fatalf("the one call the budget allows was refused after refused calls: %v", err)
	}
	_, err = h.call("trace-once", "sign_once", `{"message":"SLOW DOWN","approval_request_id":"`+id+`"}`)
	ce := wantKind(t, err, custody.EDENIED)
	if !strings.Contains(ce.Message, "maximum_calls_per_trace") {
		t.Fatalf("second call refused with %q, want the calls budget named", ce.Message)
	}
	if h.ran("sign_once") != 1 {
		t.Fatalf("sign_once ran %d times, want 1", h.ran("sign_once"))
	}
}

// TestRefusalBudget: a trace that has had its refusals of a tool is denied
// every further call of it, valid ones included, with a denial naming the
// refusal budget; other traces are not affected.
func TestRefusalBudget(t *testing.T) {
	h := newHarness(t)
	for range 3 {
		_, err := h.call("trace-probe", "probed", `{"n":"not a number"}`)
		wantKind(t, err, custody.EINVALID)
	}
	_, err := h.call("trace-probe", "probed", `{"n":1}`)
	ce := wantKind(t, err, custody.EDENIED)
	if !strings.Contains(ce.Message, "maximum_refusals_per_trace") {
		t.Fatalf("denial %q does not name the refusal budget", ce.Message)
	}
	if h.ran("probed") != 0 {
		t.Fatalf("probed ran %d times after its refusal budget was spent", h.ran("probed"))
	}
	if es := h.entries(t, custody.Query{Trace: "trace-probe", Kind: custody.KindCallRefused}); len(es) != 4 {
		t.Fatalf("%d refusals on the ledger, want 4", len(es))
	}
	if _, err := h.call("trace-fresh", "probed", `{"n":1}`); err != nil {
		t.Fatalf("another trace: %v", err)
	}
}

// TestRefusalBudgetDefault: a tool with a calls budget gets the default
// refusal budget; a call reporting an approval already waiting does not
// count against it.
func TestRefusalBudgetDefault(t *testing.T) {
	h := newHarness(t)
	for range gate.DefaultMaxRefusalsPerTrace {
		_, err := h.call("trace-d", "limited", `{"x":1}`)
		wantKind(t, err, custody.EINVALID)
	}
	_, err := h.call("trace-d", "limited", `{}`)
	if ce := wantKind(t, err, custody.EDENIED); !strings.Contains(ce.Message, "maximum_refusals_per_trace") {
		t.Fatalf("denial %q does not name the refusal budget", ce.Message)
	}

	id := h.pending(t, "trace-w", "sign_once", `{"message":"SLOW DOWN"}`)
	for range gate.DefaultMaxRefusalsPerTrace + 2 {
		if again := h.pending(t, "trace-w", "sign_once", `{"message":"SLOW DOWN"}`); again != id {
			t.Fatalf("pending reported %s, want %s", again, id)
		}
	}
	if doc, err := h.db.State(context.Background(), "refusals", "trace-w/sign_once"); err != nil || string(doc) != "1" {
		t.Fatalf("refusals = %s, %v; want 1: only the call that asked counts", doc, err)
	}
}
