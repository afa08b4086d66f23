package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/systems/peas"
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

// TestApproveSetChecksSeedSystemTool: with --config naming the pile-up
// system, an edit of a sign update is checked against the sign tool's
// contract: a lowercase message is refused, an uppercase one approved.
func TestApproveSetChecksSeedSystemTool(t *testing.T) {
	data := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "custody.json")
	if err := os.WriteFile(cfg, []byte(`{"systems":["peas"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	m := &Main{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" }}
	st, err := m.configuredStack(context.Background(), data, "", cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, err := st.approvals.Request(context.Background(), approval.Request{Tool: peas.ToolVMS, Trace: "t-vms", Requester: "agent-1",
		Args: json.RawMessage(`{"billboard_id":"I-94:VMS:MM85-EB","duration_s":900,"message":"SNOW AND ICE AHEAD"}`), Editable: []string{"message"}})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ := runMain(t, nil, "", "approvals", "approve", a.ID, "--operator", "op-1", "--set", "message=all clear, speed up", "--data", data, "--config", cfg)
	if c := decodeCall(t, out); code != exitFailed || c.Error == nil || c.Error.Kind != "invalid" || !strings.Contains(out, `"instance":"/message"`) {
		t.Fatalf("lowercase sign text: exit %d, %s; want invalid at /message", code, out)
	}
	code, out, errOut := runMain(t, nil, "", "approvals", "approve", a.ID, "--operator", "op-1", "--set", "message=SNOW AHEAD. SLOW DOWN", "--data", data, "--config", cfg)
	if code != exitOK || !strings.Contains(out, `"status":"approved"`) {
		t.Fatalf("uppercase sign text: exit %d, %s %s", code, out, errOut)
	}
}
