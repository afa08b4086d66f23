package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
)

// intend is step 5: a call with a side effect (a WRITE tool, or any tool
// an approval authorises) is recorded as call.started, durably, before its
// handler runs. The approval that authorises the call is used in the same
// commit, on condition that it is still unused: a call that loses the
// race for an approval leaves no call.started, and no approval is used
// without the entry of the call that used it. If the intent cannot be
// recorded the handler never runs.
func (g *Gateway) intend(ctx context.Context, f *flight) error {
	if !f.tool.intent {
		return nil
	}
	body := f.bodyStart(make([]byte, 0, 64+len(f.Args)))
	// Once admitted, the intent is recorded whether or not the caller is
	// still there: the run step then sees a cancelled caller and the call
	// ends as cancelled, on the ledger, instead of not at all.
	_, err := g.append(context.WithoutCancel(ctx), f, custody.KindCallStarted, append(body, '}'))
	return err
}

// changes returns the state changes committed with the call's entry of
// the given kind: the check of its refusal budget and the count against
// its calls budget with its first entry once it may run, the count
// against its refusal budget with call.refused, the use of its approval
// with call.started, the refs that custody links check with
// call.succeeded.
func (g *Gateway) changes(f *flight, kind string) []custody.Change {
	var out []custody.Change
	if c, ok := refusalCheck(f, kind); ok {
		out = append(out, c)
	}
	if c, ok := budgetChange(f, kind); ok {
		out = append(out, c)
	}
	if c, ok := refusalChange(f, kind, f.refusal); ok {
		out = append(out, c)
	}
	if kind == custody.KindCallStarted && f.approval != "" {
		out = append(out, approval.ConsumeChange(f.approval))
	}
	if c, ok := grantUse(f, kind); ok {
		out = append(out, c)
	}
	out = append(out, g.rateChanges(f, kind)...)
	if kind == custody.KindCallSucceeded {
		out = append(out, g.refChanges(f, f.refs)...)
	}
	return out
}

// committed notes that the call's entry was committed with its changes.
func (f *flight) committed() {
	f.budgetCounted = f.budgetKey != ""
	f.refusalCheck = false
}

// outcome is what a handler run produced.
type outcome struct {
	out json.RawMessage
	err error
}

// run is step 6: the handler under the deadline. A handler that fails,
// panics or overruns its deadline makes the call unavailable; its detail
// goes to the log and the ledger, never to the agent. A handler that
// ignores its context is abandoned at the deadline.
func (g *Gateway) run(ctx context.Context, f *flight) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		// The caller went away before the tool ran: it never runs.
		return nil, &custody.Error{Kind: custody.EUNAVAILABLE, Message: "the call was cancelled before its tool ran", Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, g.deadlineOf(f.tool))
	defer cancel()
	done := make(chan outcome, 1) // room for an abandoned handler's answer
	start := g.now()
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- outcome{err: fmt.Errorf("handler panicked: %v", r)}
			}
		}()
		out, err := f.tool.Handler(ctx, f.Call)
		done <- outcome{out, err}
	}()
	var o outcome
	select {
	case o = <-done:
	case <-ctx.Done():
		// An abandoned handler still answers on done: it is not reused.
		o.err = ctx.Err()
	}
	f.elapsed = g.now().Sub(start)
	if o.err != nil {
		return nil, g.runError(f, o.err)
	}
	return o.out, nil
}

// deadlineOf is how long a run of t may take.
func (g *Gateway) deadlineOf(t *tool) time.Duration {
	if t.Deadline > 0 {
		return t.Deadline
	}
	return g.deadline
}

// ErrOutcomeUnknown is wrapped by a handler's error when its request may
// have reached the tool and no answer came (a connection that broke or
// answered garbage after the request went out): for a tool with a side
// effect the gateway then records the outcome as unknown, never as a
// call that did nothing.
var ErrOutcomeUnknown = errors.New("the request may have reached the tool, and no answer came")

// runError turns a handler failure into the error the agent sees. A tool's
// own reported failure passes through as it is. A tool with a side effect
// (one whose intent was recorded) that was cancelled, overran its deadline
// or lost its answer has an unknown outcome: it may have taken effect.
func (g *Gateway) runError(f *flight, err error) error {
	var ce *custody.Error
	var te *ToolError
	switch {
	case errors.As(err, &te):
		return te
	case f.tool.intent && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, ErrOutcomeUnknown)):
		return &custody.Error{Kind: custody.EUNAVAILABLE, Outcome: custody.OutcomeUnknown, Err: err,
			Message: fmt.Sprintf("the outcome of tool %q is unknown: its request went out and no answer came, so it may have taken effect; check before calling again", f.Tool)}
	case errors.Is(err, context.DeadlineExceeded):
		return &custody.Error{Kind: custody.EUNAVAILABLE, Message: fmt.Sprintf("tool %q did not answer within %s", f.Tool, g.deadlineOf(f.tool)), Err: err}
	case errors.Is(err, context.Canceled):
		return &custody.Error{Kind: custody.EUNAVAILABLE, Message: "the call was cancelled", Err: err}
	case errors.As(err, &ce) && ce.Kind != custody.EINTERNAL:
		return &custody.Error{Kind: ce.Kind, Message: ce.Message, Violations: ce.Violations, Err: err}
	}
	return &custody.Error{Kind: custody.EUNAVAILABLE, Message: fmt.Sprintf("tool %q is unavailable", f.Tool), Err: err}
}
