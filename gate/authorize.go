package gate

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/ledger"
)

// authorize is step 4. A HUMAN_CONFIRMATION call needs an approval that is
// approved, unexpired, unused and bound to the call's action digest: the
// approval the call cites, or else one its agent asked for the same action,
// in any of its traces (a client that restarts gets a new trace).
// Without one, a grant of the calling agent that covers the call
// authorises it (see useGrant); else a request is created (or the pending
// one reported) and the call is refused with pending_approval. The approval is consumed at the
// intent step, once the call is on the ledger.
func (g *Gateway) authorize(ctx context.Context, f *flight) error {
	if f.tool.Spec.Approval != custody.HumanConfirmation && f.held == nil {
		return nil
	}
	action, err := withoutMembers(f.Args, f.tool.approvalArgs)
	if err != nil {
		return invalid("", "arguments must be a JSON object")
	}
	if f.digest, err = ledger.ActionDigest(f.Tool, action); err != nil {
		return invalid("", "arguments are not canonical JSON: "+err.Error())
	}
	if f.named != "" {
		return g.authorizeNamed(ctx, f)
	}
	g.approvalMu.Lock()
	defer g.approvalMu.Unlock()
	cands, err := g.candidates(ctx, f)
	if err != nil {
		return err
	}
	a, ask, err := choose(cands, f.digest, g.now())
	if a != nil {
		f.approval = a.ID
		f.ref(approval.RefApproval, a.ID)
		return nil
	}
	// No approval of this exact call: a grant of the agent may cover it.
	if granted, gerr := g.useGrant(ctx, f, action); granted || gerr != nil {
		return gerr
	}
	if ask {
		return g.ask(ctx, f, action, err, cands)
	}
	return err
}

// authorizeNamed checks the approval the call cites.
func (g *Gateway) authorizeNamed(ctx context.Context, f *flight) error {
	a, err := g.approvals.Get(ctx, f.named)
	if err != nil {
		return err
	}
	if err := sameRequester(a, f); err != nil {
		return err
	}
	if err := approval.Usable(a, f.digest, g.now()); err != nil {
		return err
	}
	if err := sameDefinition(a, f); err != nil {
		return err
	}
	f.approval = a.ID
	return nil
}

// definition is the SHA-256 of the definition of the called tool, as its
// refs name it; "" for a tool custody defines itself.
func (f *flight) definition() string { return f.refs[custody.RefToolDefinition] }

// sameDefinition refuses an approval asked under another definition of
// the tool than the one that would run: a re-pin voids what was approved
// before it, so that an approval of one definition never runs another.
func sameDefinition(a custody.Approval, f *flight) error {
	if a.Definition == f.definition() {
		return nil
	}
	return &custody.Error{Kind: custody.EDENIED, ApprovalRequestID: a.ID, Message: fmt.Sprintf(
		"approval %s was asked under another definition of tool %q (%.12s, now %.12s): a re-pin voids it; call again to ask for a new approval",
		a.ID, f.Tool, a.Definition, f.definition())}
}

// candidates returns the approvals the calling agent requested for the
// call's action or, after an operator's edit, bound to it, in any of its
// traces, newest first: a keyed lookup in the approval store. An approval
// belongs to its agent, not to the session that asked (a client restart
// is a new trace). Without any, the call's trace is looked up too: when
// another agent asked there, the call is refused saying so.
func (g *Gateway) candidates(ctx context.Context, f *flight) ([]custody.Approval, error) {
	as, err := g.approvals.Of(ctx, f.Actor, f.digest)
	if err != nil {
		return nil, err
	}
	out := ofCall(as, f, g.now())
	if len(out) > 0 {
		return out, nil
	}
	if as, err = g.approvals.For(ctx, f.Trace, f.digest); err != nil {
		return nil, err
	}
	for _, a := range as {
		if a.Tool == f.Tool && a.Definition == f.definition() && a.Requester != f.Actor {
			return nil, sameRequester(a, f)
		}
	}
	return nil, nil
}

// ofCall keeps the approvals of as that the call's agent asked for its
// tool under the definition that would run (another tool's, or one asked
// under another definition, is void): those of the call's trace, and
// those of its other traces that still stand, pending or approved and
// unused, unexpired. What ended in another trace (used, declined,
// expired) is that trace's history: it neither answers for nor blocks a
// new request of the same action.
func ofCall(as []custody.Approval, f *flight, now time.Time) []custody.Approval {
	var out []custody.Approval
	for _, a := range as {
		if a.Tool == f.Tool && a.Definition == f.definition() && a.Requester == f.Actor && (a.Trace == f.Trace || stands(a, now)) {
			out = append(out, a)
		}
	}
	return out
}

// stands reports whether a may still be decided or used: pending or
// approved, unused, before its expiry.
func stands(a custody.Approval, now time.Time) bool {
	return a.ConsumedSeq == 0 && now.Before(a.ExpiresAt) &&
		(a.Status == custody.ApprovalPending || a.Status == custody.ApprovalApproved)
}

// choose picks among the approvals of an action (newest first): a usable
// one bound to digest, else the refusal the newest one calls for. ask says
// a new request should be made; err then explains why, or is nil when the
// action was never asked for.
func choose(cands []custody.Approval, digest string, now time.Time) (use *custody.Approval, ask bool, err error) {
	for i := range cands {
		if approval.Usable(cands[i], digest, now) == nil {
			return &cands[i], false, nil
		}
	}
	for _, a := range cands {
		if a.Status == custody.ApprovalPending && a.Digest == digest && now.Before(a.ExpiresAt) {
			return nil, false, approval.Usable(a, digest, now)
		}
	}
	if len(cands) == 0 {
		return nil, true, nil
	}
	latest := cands[0]
	if latest.Digest != digest {
		return nil, false, &custody.Error{Kind: custody.EDENIED, ApprovalRequestID: latest.ID,
			Message: fmt.Sprintf("an operator approved approval %s with edited arguments: only the approved arguments may run", latest.ID)}
	}
	err = approval.Usable(latest, digest, now)
	return nil, custody.ErrorKind(err) == custody.EEXPIRED, err
}

// ask requests a new approval for the action and returns the refusal that
// reports it: pending_approval, or expired when an earlier request for the
// same action lapsed (the new request then goes to the channel the old one
// escalated to).
func (g *Gateway) ask(ctx context.Context, f *flight, action []byte, lapsed error, cands []custody.Approval) error {
	r := approval.Request{
		Tool: f.Tool, Args: action, Trace: f.Trace, Requester: f.Actor,
		Reason: cmp.Or(f.tool.Spec.Description, "run "+f.Tool), Editable: f.tool.Editable,
		Definition: f.definition(),
	}
	if len(cands) > 0 {
		r.Channel = cands[0].Channel
	}
	a, err := g.approvals.Request(ctx, r)
	if err != nil {
		return err
	}
	f.asked = true
	f.ref(approval.RefApproval, a.ID)
	e := &custody.Error{Kind: custody.EPENDING, ApprovalRequestID: a.ID, ExpiresAt: a.ExpiresAt,
		Message: fmt.Sprintf("tool %q needs a human approval: approval %s is waiting for an operator until %s", f.Tool, a.ID, custody.FormatTime(a.ExpiresAt))}
	if lapsed != nil {
		e.Kind = custody.EEXPIRED
		e.Message = fmt.Sprintf("%s; a new approval %s is waiting for an operator until %s", custody.ErrorMessage(lapsed), a.ID, custody.FormatTime(a.ExpiresAt))
	}
	return e
}

// sameRequester refuses an approval another principal requested: an
// approval authorises the agent that asked for it, as its
// approval.requested entry records, and no other.
func sameRequester(a custody.Approval, f *flight) error {
	if a.Requester == f.Actor {
		return nil
	}
	return &custody.Error{Kind: custody.EDENIED, ApprovalRequestID: a.ID,
		Message: fmt.Sprintf("approval %s was requested by another agent: an approval authorises only the agent that asked for it", a.ID)}
}
