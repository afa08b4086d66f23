package systems_test

import (
	"strings"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/systems"
)

// TestCheckApprovers: a system's tool may be decided by operators, never
// by the MCP client that made the call.
func TestCheckApprovers(t *testing.T) {
	tool := func(approvers ...string) gate.Tool {
		return gate.Tool{Spec: custody.ToolSpec{Name: "prescribe", Approvers: approvers}}
	}
	for _, ok := range []systems.Served{{}, {Tools: []gate.Tool{tool(), tool(custody.ApproverConsole)}}} {
		if err := ok.CheckApprovers(); err != nil {
			t.Errorf("operators only: %v", err)
		}
	}
	bad := systems.Served{Tools: []gate.Tool{tool(), tool(custody.ApproverConsole, custody.ApproverClient)}}
	if err := bad.CheckApprovers(); err == nil || !strings.Contains(err.Error(), `tool "prescribe" names the MCP client`) {
		t.Fatalf("a system's tool the client may approve: %v", err)
	}
}
