package web_test

import (
	"encoding/json"
	"testing"

	"github.com/custody-dev/custody"
)

// TestDecisionRefusesInvalidEdit: an edit the tool's contract refuses is
// refused at POST /v1/approvals/{id}/decision with 400 and the violation
// at the edited field, so the console can show it there; the approval
// stays pending. A valid edit is approved and runs.
func TestDecisionRefusesInvalidEdit(t *testing.T) {
	e := newEnv(t)
	const args = `{"channel":"general","message":"LUNCH AT NOON"}`
	id := e.pending("t-lower", args, custody.EPENDING)
	res := e.decide(id, `{"decision":"approved","arguments":{"channel":"general","message":"lunch at noon"}}`)
	if res.Status != 400 {
		t.Fatalf("lowercase edit: %d %s, want 400", res.Status, res.Body)
	}
	d := res.Error(t)
	if d.Kind != custody.EINVALID || d.ApprovalRequestID != id || len(d.Violations) == 0 || d.Violations[0].Instance != "/message" {
		t.Fatalf("lowercase edit refused with %+v, want invalid with a violation at /message", d)
	}
	got := e.do("GET", "/v1/approvals/"+id, operatorToken, nil)
	var a custody.Approval
	if err := json.Unmarshal(got.Body, &a); err != nil || a.Status != custody.ApprovalPending || string(a.Arguments) != args {
		t.Fatalf("after the refused edit: %d %s", got.Status, got.Body)
	}
	if n := len(e.entries("t-lower", custody.KindApprovalDecided)); n != 0 {
		t.Fatalf("%d decisions recorded for a refused edit", n)
	}
	edited := `{"channel":"general","message":"LUNCH AT ONE"}`
	if res := e.decide(id, `{"decision":"approved","arguments":`+edited+`}`); res.Status != 200 {
		t.Fatalf("valid edit: %d %s", res.Status, res.Body)
	}
	if res := e.call("t-lower", "post_announcement", edited); res.Status != 200 {
		t.Fatalf("the approved edit did not run: %d %s", res.Status, res.Body)
	}
}

// TestAgentReadsOwnApproval: the agent that was held reads its approval,
// with the arguments the operator approved; another agent gets 404, the
// answer for an id that does not exist, so it learns nothing of it.
func TestAgentReadsOwnApproval(t *testing.T) {
	e := newEnv(t)
	const args = `{"channel":"general","message":"LUNCH AT NOON"}`
	id := e.pending("t-own", args, custody.EPENDING)
	edited := `{"channel":"general","message":"LUNCH AT ONE"}`
	if res := e.decide(id, `{"decision":"approved","arguments":`+edited+`}`); res.Status != 200 {
		t.Fatalf("decide: %d %s", res.Status, res.Body)
	}
	res := e.do("GET", "/v1/approvals/"+id, agentToken, nil)
	var a custody.Approval
	if res.Status != 200 || json.Unmarshal(res.Body, &a) != nil {
		t.Fatalf("the requester reads its approval: %d %s", res.Status, res.Body)
	}
	if a.Status != custody.ApprovalApproved || string(a.Arguments) != edited {
		t.Fatalf("the requester read %s with %s, want approved with the edited arguments", a.Status, a.Arguments)
	}
	other := e.do("GET", "/v1/approvals/"+id, agent2Token, nil)
	missing := e.do("GET", "/v1/approvals/00000000-0000-4000-8000-000000000000", agent2Token, nil)
	if other.Status != 404 || other.Error(t).Kind != custody.ENOTFOUND {
		t.Fatalf("another agent reads the approval: %d %s, want 404", other.Status, other.Body)
	}
	if missing.Status != other.Status || missing.Error(t).Kind != other.Error(t).Kind {
		t.Fatalf("another agent's approval (%d) and a missing one (%d) answer differently", other.Status, missing.Status)
	}
	if res := e.do("GET", "/v1/approvals", agentToken, nil); res.Status != 403 {
		t.Fatalf("an agent lists approvals: %d, want 403", res.Status)
	}
}
