package gate

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
)

// A tool whose policy names the client among its approvers
// (custody.ToolSpec.Approvers) lets the user of the MCP client that made a
// held call decide it there: for a single-user setup, where the person at
// the client is the operator. The front door reaches the user (the MCP
// door through elicitation/create); the rule lives here, once: who may be
// asked, what they are shown, and that their answer is decided through
// the one decision path (approval.Service.Decide), as client:AGENT with
// the client's name and version. Operators may decide all the while: the
// first decision stands and the other is withdrawn or refused.

// ClientApproval is the user of the MCP client a held call came from, as
// its front door reaches them.
type ClientApproval struct {
	// Name and Version are the client's, as it introduced itself; the
	// decision records them.
	Name, Version string
	// Within bounds how long the user may take to answer; only the
	// call's own bounds when zero.
	Within time.Duration
	// Ask puts q to the user and returns their decision, approval.Approve
	// or approval.Decline, or an error when they could not be asked or
	// gave no decision. It returns once ctx ends, the question withdrawn.
	Ask func(ctx context.Context, q ClientQuestion) (string, error)
}

// ClientQuestion is what the user of an MCP client is asked to decide.
type ClientQuestion struct {
	// Approval is the pending request.
	Approval custody.Approval
	// Message shows it: the tool, the agent, the exact arguments and,
	// for an edit, what it changes.
	Message string
}

// checkApprovers refuses an approver the gateway does not know: a typo
// must not quietly leave a tool to operators it was meant to share.
func checkApprovers(approvers []string) error {
	for _, a := range approvers {
		if a != custody.ApproverConsole && a != custody.ApproverClient {
			return fmt.Errorf("approver %q: want %q or %q", a, custody.ApproverConsole, custody.ApproverClient)
		}
	}
	return nil
}

// ClientApproves reports whether the user of the MCP client a held call of
// the tool named name came from may decide it: its policy names the
// client among its approvers.
func (g *Gateway) ClientApproves(name string) bool {
	t, ok := g.tools[name]
	return ok && t.Spec.ClientApproves()
}

// AwaitClientDecision is AwaitDecision where the user of the call's MCP
// client may decide too. When the tool's policy does not name the client
// (ClientApproves), or c cannot ask, it is AwaitDecision, and with wait 0
// it answers held at once. Otherwise c.Ask puts the held action to the
// user while operators may decide as well; the first decision stands, and
// the other is withdrawn (the question) or refused (a later decision).
// The user's answer is decided as approval.ClientDecider(call.Actor),
// naming the client. Then:
//
//   - wait > 0: the call waits up to wait for anyone's decision; a
//     question that fails, or is not answered within c.Within, leaves it
//     to the operators until then;
//   - wait 0: the call waits while the question is open (up to c.Within
//     and the approval's expiry); a question that fails answers held, as
//     the door would have without asking.
//
// Once decided, or when the wait ends, it answers as AwaitDecision does.
func (g *Gateway) AwaitClientDecision(ctx context.Context, call custody.Call, id string, wait time.Duration, held error, c ClientApproval) (custody.Result, error) {
	if !g.ClientApproves(call.Tool) || c.Ask == nil {
		if wait <= 0 {
			return custody.Result{Trace: call.Trace}, held
		}
		return g.AwaitDecision(ctx, call, id, wait, held)
	}
	wctx, cancel := context.WithCancel(ctx)
	if wait > 0 {
		wctx, cancel = context.WithTimeout(ctx, wait)
	}
	defer cancel()
	stop := g.askClient(wctx, call, id, c, func() {
		if wait <= 0 {
			cancel() // nobody else is waited for
		}
	})
	a, err := g.approvals.Await(wctx, id)
	ended := wctx.Err() != nil
	stop()
	return g.answerHeld(ctx, call, id, held, a, err, ended)
}

// askClient asks the user of c to decide approval id of call, in the
// background, and calls failed when the question fails or goes
// unanswered. The returned function withdraws a question still open and
// waits for the asking to end; failed is not called after it.
func (g *Gateway) askClient(ctx context.Context, call custody.Call, id string, c ClientApproval, failed func()) (stop func()) {
	actx, cancel := context.WithCancel(ctx)
	if c.Within > 0 {
		actx, cancel = context.WithTimeout(ctx, c.Within)
	}
	var stopped atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := g.clientDecides(actx, call, id, c)
		if err == nil || stopped.Load() {
			return
		}
		g.log.Info("the client did not decide a held call", "approval_request_id", id, "tool", call.Tool,
			"agent", call.Actor, "client", c.Name, "err", err)
		failed()
	}()
	return func() {
		stopped.Store(true)
		cancel()
		<-done
	}
}

// ClientQuestion returns what the user of call's MCP client is asked to
// decide approval id, which holds call: for a front door that puts the
// question itself and brings the answer back with the call again (a
// multi round-trip request) to AwaitClientDecision. An error when the
// user may not be asked: the tool's policy does not name the client, the
// approval is not call's agent's pending request for its tool, or the
// arguments are too long to show.
func (g *Gateway) ClientQuestion(ctx context.Context, call custody.Call, id string) (ClientQuestion, error) {
	if !g.ClientApproves(call.Tool) {
		return ClientQuestion{}, fmt.Errorf("tool %q does not name the client among its approvers", call.Tool)
	}
	a, err := g.approvals.Get(ctx, id)
	switch {
	case err != nil:
		return ClientQuestion{}, err
	case a.Status != custody.ApprovalPending:
		return ClientQuestion{}, errDecided
	case a.Requester != call.Actor || a.Tool != call.Tool:
		return ClientQuestion{}, errNotTheClients
	}
	msg, err := clientMessage(a)
	if err != nil {
		return ClientQuestion{}, err
	}
	return ClientQuestion{Approval: a, Message: msg}, nil
}

// errDecided says an approval is no longer pending: there is nothing to
// ask.
var errDecided = errors.New("the approval is decided already")

// errNotTheClients refuses to ask a client about an approval that is not
// its agent's held call.
var errNotTheClients = errors.New("the approval is not this agent's request for this call")

// clientDecides asks the user of c about approval id and decides it as
// they answer. It returns nil once the approval is decided, by them or by
// someone before them; an error when they were not asked, did not answer
// or their decision was refused.
func (g *Gateway) clientDecides(ctx context.Context, call custody.Call, id string, c ClientApproval) error {
	q, err := g.ClientQuestion(ctx, call, id)
	switch {
	case errors.Is(err, errDecided):
		return nil
	case err != nil:
		return err
	}
	verdict, err := c.Ask(ctx, q)
	if err != nil {
		return err
	}
	// The user has answered: their decision is recorded even if the call
	// stops waiting meanwhile.
	_, err = g.approvals.Decide(context.WithoutCancel(ctx), id, approval.Decision{
		Decision: verdict, Operator: approval.ClientDecider(call.Actor),
		Client: &approval.DecidingClient{Name: c.Name, Version: c.Version},
	})
	switch custody.ErrorKind(err) {
	case "":
		g.log.Info("held call decided in the client", "approval_request_id", id, "decision", verdict,
			"tool", call.Tool, "agent", call.Actor, "client", c.Name, "client_version", c.Version)
		return nil
	case custody.ECONFLICT:
		return nil // decided first by an operator: that decision stands
	}
	return fmt.Errorf("the client's decision: %w", err)
}
