package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/systems/peas"
)

// decideWithGrant approves the request id on data with a grant of terms,
// through the stack serve builds, and returns the decided approval.
func decideWithGrant(t *testing.T, data, configPath, id string, terms approval.GrantTerms) (custody.Approval, error) {
	t.Helper()
	m := &Main{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" }}
	st, err := m.configuredStack(context.Background(), data, "", configPath)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	return st.approvals.Decide(context.Background(), id, approval.Decision{Decision: approval.Approve, Operator: "op-1", Grant: &terms})
}

// TestGrantsCLI: a grant made with a decision lets the next announcement
// to #ops run without asking; `grants list` shows it with its uses;
// `grants revoke` ends it, after which the next call is held.
func TestGrantsCLI(t *testing.T) {
	data := t.TempDir()
	call := func(trace, message string) (int, string) {
		code, out, _ := runMain(t, nil, `{"channel":"ops","message":"`+message+`"}`, "call", "--tool", "post_announcement", "--args", "-", "--trace", trace, "--data", data)
		return code, out
	}
	code, out := call("t-grant", "DEPLOY AT NOON")
	if code != exitPending {
		t.Fatalf("exit %d, want pending: %s", code, out)
	}
	schema := json.RawMessage(`{"type":"object","required":["channel","message"],"properties":{"channel":{"const":"ops"},"message":{"type":"string"}}}`)
	a, err := decideWithGrant(t, data, "", decodeCall(t, out).Error.Approval, approval.GrantTerms{Arguments: schema, MaxUses: 3})
	if err != nil || a.Grant == "" {
		t.Fatalf("decide with a grant: %+v, %v", a, err)
	}
	if code, out = call("t-grant-2", "DEPLOY DONE"); code != exitOK {
		t.Fatalf("a call within the grant: exit %d, %s", code, out)
	}

	code, out, errOut := runMain(t, nil, "", "grants", "list", "--data", data, "--json")
	var grants []custody.Grant
	if code != exitOK || json.Unmarshal([]byte(out), &grants) != nil || len(grants) != 1 {
		t.Fatalf("grants list --json: exit %d, %s %s", code, out, errOut)
	}
	if g := grants[0]; g.ID != a.Grant || g.Uses != 1 || g.Status != custody.GrantActive || g.Agent == "" {
		t.Errorf("listed %+v", g)
	}
	if code, out, _ = runMain(t, nil, "", "grants", "list", "--data", data); code != exitOK || !strings.Contains(out, a.Grant) || !strings.Contains(out, "1/3") {
		t.Errorf("grants list: exit %d, %s", code, out)
	}

	if code, _, _ = runMain(t, nil, "", "grants", "revoke", a.Grant, "--operator", "op-1", "--data", data); code != exitUsage {
		t.Errorf("revoke without --reason: exit %d, want usage", code)
	}
	code, out, errOut = runMain(t, nil, "", "grants", "revoke", a.Grant, "--reason", "the deploy is done", "--operator", "op-1", "--data", data)
	if code != exitOK || !strings.Contains(out, `"status":"revoked"`) {
		t.Fatalf("revoke: exit %d, %s %s", code, out, errOut)
	}
	if code, out = call("t-grant-3", "ONE MORE"); code != exitPending {
		t.Errorf("a call after the revocation: exit %d, %s", code, out)
	}
	if code, out, _ = runMain(t, nil, "", "grants", "revoke", a.Grant, "--reason", "again", "--operator", "op-1", "--data", data); code == exitOK {
		t.Errorf("a second revocation: exit %d, %s", code, out)
	}
}

// TestSeedSignRefusesGrant: the pile-up system's sign update, a
// consequential tool, forbids grants: a decision with one is refused,
// saying so, and the request stays pending.
func TestSeedSignRefusesGrant(t *testing.T) {
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
		Args: json.RawMessage(`{"billboard_id":"I-94:VMS:MM85-EB","duration_s":900,"message":"SNOW AND ICE AHEAD"}`)})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, err = decideWithGrant(t, data, cfg, a.ID, approval.GrantTerms{Arguments: json.RawMessage(`{}`), MaxUses: 5})
	if custody.ErrorKind(err) != custody.EDENIED || !strings.Contains(custody.ErrorMessage(err), "forbids grants") {
		t.Fatalf("a grant for the sign tool: %v, want denied: forbids grants", err)
	}
	code, out, _ := runMain(t, nil, "", "approvals", "list", "--status", "pending", "--data", data)
	if code != exitOK || !strings.Contains(out, a.ID) {
		t.Errorf("the request is no longer pending: %s", out)
	}
}
