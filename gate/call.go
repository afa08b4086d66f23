package gate

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/custody-dev/custody"
)

// flight is one call on its way through the pipeline.
type flight struct {
	custody.Call
	tool  *tool
	start time.Time
	// argsOK says Args passed the decode step and may be embedded as JSON.
	argsOK bool
	// badTrace is a trace id the caller sent that could not be used.
	badTrace string
	// newTrace says the gateway made the call's trace: nothing has
	// counted in it yet.
	newTrace bool
	// digest is the action digest of a HUMAN_CONFIRMATION call.
	digest string
	// named is the approval the call cites through an approval link.
	named string
	// approval is the approval that authorises the call, consumed with
	// its call.started entry.
	approval string
	// grant is the grant that authorises the call in place of an
	// approval, used with its call.started entry.
	grant *custody.Grant
	// budgetKey is the call's key in the budget namespace when its tool
	// has a calls-per-trace budget; budgetCounted says the call was
	// counted with an entry already.
	budgetKey     string
	budgetCounted bool
	// refusalKey is the call's key in the refusals namespace when its
	// tool has a refusal budget; asked says the call made a new approval
	// request.
	refusalKey string
	asked      bool
	// refusalCheck says the call's first entry that lets it go on checks
	// its refusal budget (see refusalCheck).
	refusalCheck bool
	// held is the approveWhen condition that holds the call for a
	// human's approval; nil when none does.
	held *custody.Condition
	// refusal is the error a call.refused entry records.
	refusal *custody.Error
	// refs thread the chain of custody onto every entry of the call.
	// Once an entry carries them they are shared: ref copies them before
	// adding, so that no entry's refs change after it was appended.
	refs       map[string]string
	refsShared bool
	// elapsed is how long the handler ran.
	elapsed time.Duration
}

// Call runs one tool call through the eight steps and returns its result
// once the outcome entry is durable. Every error is a *custody.Error whose
// Message is safe to show to the agent; a refusal carries the Receipt of
// the entry that recorded it.
//
// The steps, each a function of its own, in the files named for them:
//
//	1 decode      decode.go     the call's bytes and trace id
//	  lookupTool  call.go       the tool is in the envelope and the agent's
//	  refusals    policy.go     the trace has refusals of the tool left
//	2 checkInput  validate.go   the arguments against the input contract
//	3 policy      policy.go     budget, resource scope, custody links
//	4 authorize   authorize.go  the approval of a HUMAN_CONFIRMATION action
//	5 intend      run.go        call.started, durable, before the side effect
//	6 run         run.go        the handler under its deadline
//	7 checkOutput validate.go   the output against the output contract
//	8 record      record.go     succeed, refuse, fail, toolFailed or breach
func (g *Gateway) Call(ctx context.Context, c custody.Call) (custody.Result, error) {
	ctx, sp := g.startCall(ctx, c)
	res, err := g.call(ctx, c, sp)
	sp.end(res, err)
	return res, err
}

// call runs the steps of Call, each stage under its span when sp is not
// nil.
func (g *Gateway) call(ctx context.Context, c custody.Call, sp *callSpan) (custody.Result, error) {
	f := &flight{Call: c, start: g.now()}
	// Every call ends with a ledger entry, a cancelled one too: the
	// record step runs on after the caller has gone.
	rec := context.WithoutCancel(ctx)
	if err := g.admitCall(ctx, f, sp); err != nil {
		done := sp.step(SpanRecord)
		err = g.refuse(rec, f, err)
		done(err)
		return custody.Result{Trace: f.Trace}, err
	}
	done := sp.step(SpanRun)
	out, runErr := g.run(ctx, f)
	done(runErr)
	var outErr error
	if runErr == nil {
		done = sp.step(SpanValidate)
		outErr = g.checkOutput(ctx, f, out)
		done(outErr)
	}
	done = sp.step(SpanRecord)
	res, err := g.finish(rec, f, out, runErr, outErr)
	done(err)
	return res, err
}

// finish records how a call that ran ended: the tool's own error, the
// handler's failure, an output that breaches its contract, or success.
func (g *Gateway) finish(ctx context.Context, f *flight, out json.RawMessage, runErr, outErr error) (custody.Result, error) {
	var te *ToolError
	switch {
	case errors.As(runErr, &te):
		return g.toolFailed(ctx, f, te.Output)
	case runErr != nil:
		return custody.Result{Trace: f.Trace}, g.fail(ctx, f, runErr)
	case outErr != nil:
		return custody.Result{Trace: f.Trace}, g.breach(ctx, f, out, outErr)
	}
	return g.succeed(ctx, f, out)
}

// admitCall runs steps 1 to 5, the ones before the handler, in order, and
// returns the first refusal: decode, the tool and the input contract under
// a validate span, policy and approval under an approve span, and the
// durable intent under a record span.
func (g *Gateway) admitCall(ctx context.Context, f *flight, sp *callSpan) error {
	done := sp.step(SpanValidate)
	err := g.validateCall(ctx, f)
	done(err)
	if err != nil {
		return err
	}
	done = sp.step(SpanApprove)
	err = g.approveCall(ctx, f)
	done(err)
	if err != nil {
		return err
	}
	done = sp.step(SpanRecord)
	err = g.intend(ctx, f)
	done(err)
	return err
}

// validateCall runs steps 1 and 2: the call's bytes, its tool and its
// arguments against the input contract.
func (g *Gateway) validateCall(ctx context.Context, f *flight) error {
	for _, c := range validateChecks() {
		if err := c.run(g, ctx, f); err != nil {
			return err
		}
	}
	return nil
}

// validateChecks are the checks of steps 1 and 2, in order (see
// policyChecks).
func validateChecks() []check {
	return []check{
		{RuleTrace, (*Gateway).decode},
		{RuleEnvelope, (*Gateway).lookupTool},
		{RuleRefusals, (*Gateway).refusals},
		{RuleContract, (*Gateway).checkContract},
		{RuleArguments, (*Gateway).checkArguments},
	}
}

// approveCall runs steps 3 and 4: the envelope's policy and the approval
// of a HUMAN_CONFIRMATION action.
func (g *Gateway) approveCall(ctx context.Context, f *flight) error {
	if err := g.policy(ctx, f); err != nil {
		return err
	}
	return f.explainHold(g.authorize(ctx, f))
}

// lookupTool finds the called tool in the envelope: a tool outside it is
// denied, and so is a tool the agent may not use, so that a caller learns
// nothing of tools it cannot call.
func (g *Gateway) lookupTool(_ context.Context, f *flight) error {
	t, ok := g.tools[f.Tool]
	if !ok || !g.Allows(f.Actor, f.Tool) {
		return custody.Errorf(custody.EDENIED, "tool %q is not in the envelope %q", f.Tool, g.envelope)
	}
	f.tool = t
	if t.Refs != nil {
		for k, v := range t.Refs() {
			f.ref(k, v)
		}
	}
	return nil
}

// ToolError is what a handler returns when its tool ran and reported a
// failure of its own (an MCP result with isError set): Output is the
// tool's answer, which must still match the output contract. The call is
// recorded as call.failed with that output, and the caller gets it with
// Result.ToolError set.
type ToolError struct {
	Output json.RawMessage
}

func (e *ToolError) Error() string { return "the tool reported an error" }
