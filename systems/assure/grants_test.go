package assure

import (
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/gate"
)

// TestConsequentialToolsForbidGrants: once bound to the envelope, every
// CONSEQUENTIAL tool forbids grants and no other does.
func TestConsequentialToolsForbidGrants(t *testing.T) {
	tools := []gate.Tool{
		{Spec: custody.ToolSpec{Name: "prescribe_medication", Effect: custody.EffectConsequential}},
		{Spec: custody.ToolSpec{Name: "book_follow_up", Effect: custody.EffectReversible}},
	}
	noGrants(tools)
	if tools[0].Spec.GrantsAllowed() || !tools[1].Spec.GrantsAllowed() {
		t.Errorf("grants allowed: %s %v, %s %v", tools[0].Spec.Name, tools[0].Spec.GrantsAllowed(), tools[1].Spec.Name, tools[1].Spec.GrantsAllowed())
	}
}
