package gate

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/custody-dev/custody"
)

// The spans of a traced call: one SpanCall per Gateway.Call, with a child
// span for each stage it reached, in order: validate (decode, the tool,
// the input contract), approve (policy and approval), record (the durable
// call.started), run (the handler), validate (the output contract) and
// record (the outcome entry).
const (
	SpanCall     = "custody.call"
	SpanValidate = "custody.validate"
	SpanApprove  = "custody.approve"
	SpanRun      = "custody.run"
	SpanRecord   = "custody.record"
)

// Attributes of the SpanCall span.
const (
	AttrTool    = "custody.tool"
	AttrTrace   = "custody.trace_id"
	AttrOutcome = "custody.outcome"
	AttrSeq     = "custody.ledger.seq"
	AttrKind    = "custody.error.kind"
	AttrAgent   = "custody.agent"
)

// Outcomes of a call, as AttrOutcome reports them.
const (
	OutcomeSucceeded = "succeeded"
	OutcomeToolError = "tool_error"
	OutcomeRefused   = "refused"
	OutcomePending   = "pending_approval"
	OutcomeFailed    = "failed"
)

// callSpan is the span of one traced call; nil when tracing is off, so
// that an untraced call pays one nil check a stage.
type callSpan struct {
	tracer trace.Tracer
	span   trace.Span
	ctx    context.Context
}

// noStep ends a stage that is not traced.
func noStep(error) {}

// startCall starts the span of call c under any span in ctx (such as the
// caller's, continued from a traceparent header); nil when tracing is off.
func (g *Gateway) startCall(ctx context.Context, c custody.Call) (context.Context, *callSpan) {
	if g.tracer == nil {
		return ctx, nil
	}
	ctx, sp := g.tracer.Start(ctx, SpanCall, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String(AttrTool, c.Tool), attribute.String(AttrAgent, c.Actor)))
	return ctx, &callSpan{tracer: g.tracer, span: sp, ctx: ctx}
}

// step starts the child span of a stage and returns the func that ends
// it with the stage's error.
func (s *callSpan) step(name string) func(error) {
	if s == nil {
		return noStep
	}
	_, sp := s.tracer.Start(s.ctx, name)
	return func(err error) {
		if err != nil {
			sp.SetStatus(codes.Error, custody.ErrorKind(err))
		}
		sp.End()
	}
}

// end ends the call's span with its outcome, the ledger seq of the entry
// that recorded it and the trace id, and an error status on anything but
// success or a pending approval.
func (s *callSpan) end(res custody.Result, err error) {
	if s == nil {
		return
	}
	seq := res.Receipt.Seq
	var ce *custody.Error
	if errors.As(err, &ce) && ce.Receipt != nil {
		seq = ce.Receipt.Seq
	}
	outcome := OutcomeSucceeded
	switch kind := custody.ErrorKind(err); {
	case err == nil && res.ToolError:
		outcome = OutcomeToolError
	case err == nil:
	case kind == custody.EPENDING:
		outcome = OutcomePending
	case kind == custody.EUNAVAILABLE || kind == custody.EINTERNAL:
		outcome = OutcomeFailed
	default:
		outcome = OutcomeRefused
	}
	attrs := []attribute.KeyValue{attribute.String(AttrOutcome, outcome), attribute.String(AttrTrace, res.Trace)}
	if seq > 0 {
		attrs = append(attrs, attribute.Int64(AttrSeq, seq))
	}
	if err != nil {
		attrs = append(attrs, attribute.String(AttrKind, custody.ErrorKind(err)))
		if outcome != OutcomePending {
			s.span.SetStatus(codes.Error, custody.ErrorMessage(err))
		}
	} else if res.ToolError {
		s.span.SetStatus(codes.Error, "the tool reported an error")
	}
	s.span.SetAttributes(attrs...)
	s.span.End()
}
