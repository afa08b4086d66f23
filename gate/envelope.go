package gate

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/contract"
)

// EnvelopeSchema names the Clinical Action Envelope contract (seed 003) in
// the registry.
const EnvelopeSchema = "cae:envelope"

// envelopeDoc is the part of a Clinical Action Envelope the gateway
// enforces.
type envelopeDoc struct {
	ID    string `json:"envelope_id"`
	Tools []struct {
		ID       string                 `json:"tool_id"`
		Purpose  string                 `json:"purpose"`
		Access   custody.Access         `json:"access"`
		Effect   custody.Effect         `json:"effect"`
		Approval custody.ApprovalPolicy `json:"approval"`
		Scope    string                 `json:"resource_scope"`
		MaxCalls int                    `json:"maximum_calls_per_trace"`
	} `json:"tools"`
}

// LoadEnvelope reads a Clinical Action Envelope document (seed 003) and
// pairs each declared tool with its implementation in impls, keyed by
// tool_id. The document is validated against the envelope contract first
// (EINVALID with violations). The declaration wins: access, effect,
// approval, resource_scope and maximum_calls_per_trace override the
// implementation's spec, and purpose fills an empty description. A
// declared tool without an implementation, or an implementation the
// document does not declare, is an error naming the tools.
func LoadEnvelope(raw []byte, reg *contract.Registry, impls map[string]Tool) (Envelope, error) {
	if err := reg.Validate(EnvelopeSchema, raw); err != nil {
		return Envelope{}, err
	}
	var doc envelopeDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		return Envelope{}, &custody.Error{Kind: custody.EINVALID, Message: "envelope: " + err.Error(), Err: err}
	}
	env := Envelope{ID: doc.ID}
	var missing []string
	declared := map[string]bool{}
	for _, d := range doc.Tools {
		declared[d.ID] = true
		t, ok := impls[d.ID]
		if !ok {
			missing = append(missing, d.ID)
			continue
		}
		t.Spec.Name = d.ID
		t.Spec.Access, t.Spec.Effect, t.Spec.Approval = d.Access, d.Effect, d.Approval
		t.Spec.Scope, t.Spec.MaxCallsPerTrace = d.Scope, d.MaxCalls
		if t.Spec.Description == "" {
			t.Spec.Description = d.Purpose
		}
		env.Tools = append(env.Tools, t)
	}
	var undeclared []string
	for name := range impls {
		if !declared[name] {
			undeclared = append(undeclared, name)
		}
	}
	slices.Sort(undeclared)
	switch {
	case len(missing) > 0:
		return Envelope{}, custody.Errorf(custody.EINVALID, "envelope %s declares tools without an implementation: %s", doc.ID, strings.Join(missing, ", "))
	case len(undeclared) > 0:
		return Envelope{}, custody.Errorf(custody.EINVALID, "envelope %s does not declare the implemented tools: %s", doc.ID, strings.Join(undeclared, ", "))
	}
	return env, nil
}
