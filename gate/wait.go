package gate

import (
	"context"
	"fmt"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
)

// A front door may hold a call refused pending_approval open while an
// operator decides (the tool's ToolSpec.ApprovalWait over MCP, a client's
// Prefer: wait over HTTP): Held says whether a refusal is such a one,
// AwaitDecision waits and answers. The rule lives here, once, for every
// door; the doors keep only what is theirs (progress notifications,
// headers, caps).

// Held returns the approval a refusal of a call holds it for, and how
// long its tool's policy lets a front door wait for the decision
// (ToolSpec.ApprovalWait, 0 when it does not say): id is "" when err is
// no pending_approval refusal naming an approval.
func (g *Gateway) Held(call custody.Call, err error) (id string, wait time.Duration) {
	if custody.ErrorKind(err) != custody.EPENDING {
		return "", 0
	}
	id = custody.AsError(err).ApprovalRequestID
	if t, ok := g.tools[call.Tool]; ok && id != "" {
		wait = t.Spec.ApprovalWait
	}
	return id, wait
}

// AwaitDecision waits up to wait for an operator's decision on approval
// id, which held call (refused with held), and answers call as the
// decision has it, as one call would:
//
//   - approved: the gateway runs exactly call again, which the approval
//     now authorises, and returns its result;
//   - declined or expired: the gateway answers exactly call again, and
//     returns its refusal, recorded (after an expiry that refusal opens a
//     new request, as any call of the action after its expiry does);
//   - still undecided after wait: held, as the door would have answered
//     without waiting;
//   - ctx ended first (the client cancelled or went away): the wait is
//     recorded as call.cancelled, naming the approval, which stays as it
//     is for the agent's next call, and that error is returned.
//
// It waits on the approval store's notifications (approval.Service.Await),
// never in a busy loop.
func (g *Gateway) AwaitDecision(ctx context.Context, call custody.Call, id string, wait time.Duration, held error) (custody.Result, error) {
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	a, err := g.approvals.Await(wctx, id)
	return g.answerHeld(ctx, call, id, held, a, err, wctx.Err() != nil)
}

// answerHeld answers held call once the wait for approval id is over, as
// AwaitDecision says: a and err are what approval.Service.Await returned,
// ended whether the wait itself ended (ran out, or was called off)
// before a decision.
func (g *Gateway) answerHeld(ctx context.Context, call custody.Call, id string, held error, a custody.Approval, err error, ended bool) (custody.Result, error) {
	switch {
	case ctx.Err() != nil:
		return custody.Result{Trace: call.Trace}, g.abandon(ctx, call, id)
	case ended && (err != nil || a.Status == custody.ApprovalPending):
		return custody.Result{Trace: call.Trace}, held
	case err != nil:
		return custody.Result{Trace: call.Trace}, err
	}
	g.log.Debug("held call decided", "approval_request_id", id, "status", a.Status, "tool", call.Tool)
	return g.Call(ctx, call)
}

// abandon records that the caller of call stopped waiting for approval id
// before it was decided: a call.cancelled entry with the call's exact
// arguments, naming the approval. Nothing ran.
func (g *Gateway) abandon(ctx context.Context, call custody.Call, id string) error {
	ctx = context.WithoutCancel(ctx)
	f := &flight{Call: call, start: g.now()}
	if err := g.decode(ctx, f); err != nil {
		return err
	}
	if err := g.lookupTool(ctx, f); err != nil {
		return err
	}
	f.ref(approval.RefApproval, id)
	return g.fail(ctx, f, &custody.Error{Kind: custody.EUNAVAILABLE, ApprovalRequestID: id, Err: context.Canceled,
		Message: fmt.Sprintf("the call was cancelled while it waited for approval %s: nothing ran, and the approval stands for the next call", id)})
}
