package gate

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
)

// CheckApproval checks an action an operator is about to approve, with its
// arguments as approved, against what the gateway will hold the call that
// uses the approval to: the tool's input contract, the arguments policy
// that narrows it, its resource scope, its custody links to refs, and that
// the agent that asked may call the tool. It is
// the approval service's validator (approval.Config.Validate), so that an
// approved action is one that will run as approved.
//
// The approval's arguments leave out the members that cite the approval
// (the tool's approval links); they are checked as the call will send
// them, citing a.ID. A refusal is a *custody.Error with violations whose
// instances point into the arguments. A tool the envelope does not offer
// is an error wrapping approval.ErrNoContract. Nothing is written: a
// resource the trace has not claimed yet stays unclaimed.
func (g *Gateway) CheckApproval(ctx context.Context, a custody.Approval) error {
	t, ok := g.tools[a.Tool]
	if !ok {
		return fmt.Errorf("gate: tool %q is not in the envelope %q: %w", a.Tool, g.envelope, approval.ErrNoContract)
	}
	if !g.Allows(a.Requester, a.Tool) {
		return custody.Errorf(custody.EDENIED, "agent %q, which asked for the approval, may not call tool %q", a.Requester, a.Tool)
	}
	args, err := withApprovalArgs(a.Arguments, t.approvalArgs, a.ID)
	if err != nil {
		return invalid("", "the approved arguments must be a JSON object")
	}
	f := &flight{Call: custody.Call{Tool: a.Tool, Trace: a.Trace, Actor: a.Requester, Args: args}, tool: t}
	if err := g.checkInput(ctx, f); err != nil {
		return err
	}
	if err := g.scopeOwned(ctx, f); err != nil {
		return err
	}
	for _, l := range t.Spec.Links {
		if l.Approval {
			continue
		}
		if err := g.refLink(ctx, f, l); err != nil {
			return err
		}
	}
	return nil
}

// scopeOwned refuses a call naming a resource another trace owns, without
// claiming a resource nobody owns (see scope, which does).
func (g *Gateway) scopeOwned(ctx context.Context, f *flight) error {
	v, key, ok, err := scopedResource(f)
	if !ok || err != nil {
		return err
	}
	owner, owned, err := g.owner(ctx, key)
	if err != nil || !owned || owner == f.Trace {
		return err
	}
	return scopeRefusal(f, v)
}

// scopedResource returns the resource a call names in its tool's scope
// argument, and the key its owner is kept under; ok is false when the tool
// is not scoped or the call names no resource. A resource that is neither
// a string nor a number is refused, with a violation at the argument.
func scopedResource(f *flight) (v, key string, ok bool, err error) {
	if f.tool.scopeArg == "" {
		return "", "", false, nil
	}
	raw, named := lookup(f.Args, f.tool.scopeArg)
	if !named {
		return "", "", false, nil
	}
	if v, ok = refValue(raw); !ok {
		return "", "", false, invalid(f.tool.scopeArg, fmt.Sprintf("resource argument %s must be a string or a number", f.tool.scopeArg))
	}
	return v, f.tool.scopeName + "/" + v, true, nil
}

// withApprovalArgs returns the object args with each member named in names
// that it lacks set to the approval id: the arguments as a call citing the
// approval sends them. It returns args itself when names is empty.
func withApprovalArgs(args json.RawMessage, names []string, id string) (json.RawMessage, error) {
	if len(names) == 0 {
		return args, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("approved arguments: not a JSON object")
	}
	idJSON, err := json.Marshal(id)
	if err != nil {
		return nil, fmt.Errorf("encode approval id: %w", err)
	}
	for _, n := range names {
		if _, ok := obj[n]; !ok {
			obj[n] = idJSON
		}
	}
	return json.Marshal(obj)
}
