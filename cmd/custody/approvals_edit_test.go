package main

import (
	"strings"
	"testing"
)

// TestApproveSetRefusesInvalidEdit: `approvals approve --set` with a value
// the tool's contract refuses is refused with the violation at the field,
// and the approval stays pending; a valid edit is approved and runs.
func TestApproveSetRefusesInvalidEdit(t *testing.T) {
	data := t.TempDir()
	post := `{"channel":"ops","message":"HELLO"}`
	code, out, _ := runMain(t, nil, post, "call", "--tool", "post_announcement", "--args", "-", "--trace", "t-set", "--data", data)
	if code != exitPending {
		t.Fatalf("exit %d, want pending: %s", code, out)
	}
	id := decodeCall(t, out).Error.Approval
	code, out, _ = runMain(t, nil, "", "approvals", "approve", id, "--operator", "op-1", "--set", "message=hello world", "--data", data)
	c := decodeCall(t, out)
	if code != exitFailed || c.Error == nil || c.Error.Kind != "invalid" || len(c.Error.Violations) == 0 || !strings.Contains(string(c.Error.Violations[0]), `"instance":"/message"`) {
		t.Fatalf("lowercase --set: exit %d, %s; want invalid with a violation at /message", code, out)
	}
	code, out, _ = runMain(t, nil, "", "approvals", "list", "--status", "pending", "--data", data)
	if code != exitOK || !strings.Contains(out, id) {
		t.Fatalf("the approval is no longer pending after a refused edit: %s", out)
	}
	code, out, errOut := runMain(t, nil, "", "approvals", "approve", id, "--operator", "op-1", "--set", "message=HELLO WORLD", "--data", data)
	if code != exitOK || !strings.Contains(out, `"status":"approved"`) {
		t.Fatalf("valid --set: exit %d, %s %s", code, out, errOut)
	}
	edited := `{"channel":"ops","message":"HELLO WORLD"}`
	if code, out, _ = runMain(t, nil, edited, "call", "--tool", "post_announcement", "--args", "-", "--trace", "t-set", "--data", data); code != exitOK {
		t.Fatalf("the approved edit did not run: exit %d, %s", code, out)
	}
}
