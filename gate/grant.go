package gate

import (
	"context"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/contract"
)

// useGrant is the approval step's last resort before a human is asked: a
// grant of the calling agent for the tool, active now, made under the
// definition that would run, whose schema the action matches. It reports
// whether one covers the call; the grant is then used with the call's
// call.started entry, under its limit (approval.UseChange). A grant only
// stands in for the human decision: the contract and the policy have
// checked the call already, and the steps after this one still run.
func (g *Gateway) useGrant(ctx context.Context, f *flight, action []byte) (bool, error) {
	grants, err := g.approvals.GrantsFor(ctx, f.Actor, f.Tool)
	if err != nil || len(grants) == 0 {
		return false, err
	}
	for i := range grants {
		gr := &grants[i]
		if gr.Status != custody.GrantActive || approval.GrantState(*gr, g.now()) != custody.GrantActive ||
			gr.Agent != f.Actor || gr.Tool != f.Tool || gr.Definition != f.definition() {
			continue
		}
		sch, err := g.grantSchema(*gr)
		if err != nil {
			g.log.Warn("a grant's schema does not compile; the grant is skipped", "grant", gr.ID, "err", err)
			continue
		}
		if sch.Validate(action) != nil {
			continue
		}
		f.grant = gr
		f.ref(custody.RefGrant, gr.ID)
		return true, nil
	}
	return false, nil
}

// grantSchema returns the compiled schema of gr's arguments, compiling it
// once per grant.
func (g *Gateway) grantSchema(gr custody.Grant) (*contract.Schema, error) {
	if s, ok := g.grantSchemas.Load(gr.ID); ok {
		return s.(*contract.Schema), nil
	}
	s, err := approval.CompileGrant(gr)
	if err != nil {
		return nil, err
	}
	g.grantSchemas.Store(gr.ID, s)
	return s, nil
}

// CheckGrant checks a grant an operator is about to make against the
// tool it is for: a tool the gateway runs, that needs a human's
// confirmation, whose policy does not forbid grants ("grants": false),
// and that the agent may call. Its schema must compile. It is the
// approval service's grant check (approval.Config.CheckGrant). A tool
// that forbids grants is EDENIED; any other refusal EINVALID.
func (g *Gateway) CheckGrant(_ context.Context, gr custody.Grant) error {
	t, ok := g.tools[gr.Tool]
	switch {
	case !ok:
		return custody.Errorf(custody.EINVALID, "tool %q is not one the gateway runs: a grant covers calls of the gateway's tools only", gr.Tool)
	case t.Spec.Approval != custody.HumanConfirmation:
		return custody.Errorf(custody.EINVALID, "tool %q needs no approval: there is nothing to grant", gr.Tool)
	case !t.Spec.GrantsAllowed():
		return custody.Errorf(custody.EDENIED, "tool %q forbids grants (its policy says \"grants\": false): an operator approves each of its calls once", gr.Tool)
	case !g.Allows(gr.Agent, gr.Tool):
		return custody.Errorf(custody.EDENIED, "agent %q may not call tool %q", gr.Agent, gr.Tool)
	}
	if _, err := approval.CompileGrant(gr); err != nil {
		return err
	}
	return nil
}

// Definition returns the definition the tool named name runs now, as its
// entries name it (custody.RefToolDefinition; "" for a tool custody
// defines itself), and whether the envelope has the tool.
func (g *Gateway) Definition(name string) (string, bool) {
	t, ok := g.tools[name]
	if !ok {
		return "", false
	}
	if t.Refs == nil {
		return "", true
	}
	return t.Refs()[custody.RefToolDefinition], true
}

// grantUse returns the change that uses the call's grant, committed with
// its call.started entry, and whether there is one.
func grantUse(f *flight, kind string) (custody.Change, bool) {
	if f.grant == nil || kind != custody.KindCallStarted {
		return custody.Change{}, false
	}
	return approval.UseChange(*f.grant), true
}
