package gate

import (
	_ "embed"
	"encoding/json"
	"slices"
	"strings"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/contract"
)

// EnvelopeSchema names the Clinical Action Envelope contract (seed 003) in
// the registry.
const EnvelopeSchema = "cae:envelope"

// envelopeContractJSON is the Clinical Action Envelope contract, byte for
// byte as published. The envelope is the gateway's own format, not a seed
// system's: LoadEnvelope reads it, so the gateway owns its contract.
//
//go:embed contracts/clinical-action-envelope.json
var envelopeContractJSON []byte

// EnvelopeContract returns the Clinical Action Envelope contract for
// contract.Options.Contracts, its root named EnvelopeSchema. A registry
// given to LoadEnvelope must hold it.
func EnvelopeContract() contract.Source {
	return contract.Source{
		File:  "clinical-action-envelope.json",
		Raw:   append([]byte(nil), envelopeContractJSON...),
		Names: func(any) []contract.Name { return []contract.Name{{Name: EnvelopeSchema}} },
	}
}

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

// LoadEnvelope reads a Clinical Action Envelope document (seed 003): its
// id, and for each tool its name (tool_id), purpose (as the description),
// access, effect, approval, resource_scope and maximum_calls_per_trace.
// The document is validated against the envelope contract first
// (EINVALID with violations). The specs name no schemas: the tools' own
// implementations bring those (Bind).
func LoadEnvelope(raw []byte, reg *contract.Registry) (custody.Envelope, error) {
	if err := reg.Validate(EnvelopeSchema, raw); err != nil {
		return custody.Envelope{}, err
	}
	var doc envelopeDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		return custody.Envelope{}, &custody.Error{Kind: custody.EINVALID, Message: "envelope: " + err.Error(), Err: err}
	}
	env := custody.Envelope{ID: doc.ID, Tools: make([]custody.ToolSpec, len(doc.Tools))}
	for i, d := range doc.Tools {
		env.Tools[i] = custody.ToolSpec{Name: d.ID, Description: d.Purpose, Access: d.Access, Effect: d.Effect,
			Approval: d.Approval, Scope: d.Scope, MaxCallsPerTrace: d.MaxCalls}
	}
	return env, nil
}

// Bind pairs each tool env declares with its implementation in impls,
// keyed by tool name, in env's order, for New. The declaration wins:
// access, effect, approval, resource scope and calls per trace override
// the implementation's spec, and the declared description fills an empty
// one. A declared tool without an implementation, or an implementation
// env does not declare, is an error naming the tools.
func Bind(env custody.Envelope, impls map[string]Tool) ([]Tool, error) {
	var tools []Tool
	var missing []string
	declared := map[string]bool{}
	for _, d := range env.Tools {
		declared[d.Name] = true
		t, ok := impls[d.Name]
		if !ok {
			missing = append(missing, d.Name)
			continue
		}
		t.Spec.Name = d.Name
		t.Spec.Access, t.Spec.Effect, t.Spec.Approval = d.Access, d.Effect, d.Approval
		t.Spec.Scope, t.Spec.MaxCallsPerTrace = d.Scope, d.MaxCallsPerTrace
		if d.ApprovalWait > 0 {
			// An envelope built in Go may hold its calls open for approval.
			t.Spec.ApprovalWait = d.ApprovalWait
		}
		if t.Spec.Description == "" {
			t.Spec.Description = d.Description
		}
		tools = append(tools, t)
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
		return nil, custody.Errorf(custody.EINVALID, "envelope %s declares tools without an implementation: %s", env.ID, strings.Join(missing, ", "))
	case len(undeclared) > 0:
		return nil, custody.Errorf(custody.EINVALID, "envelope %s does not declare the implemented tools: %s", env.ID, strings.Join(undeclared, ", "))
	}
	return tools, nil
}
