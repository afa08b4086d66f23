package peas

import (
	"context"
	"encoding/json"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/gate"
)

// hopKey is the context key of the ids of the hop's span.
type hopKey struct{}

// hop holds the hex ids of a hop's span.
type hop struct{ traceID, spanID string }

// traced makes each call h serves a span of its chain when tracing is on.
// The span's ids ride in the context, where hopIDs reads them.
func (s *System) traced(tool string, h gate.Handler) gate.Handler {
	return func(ctx context.Context, call custody.Call) (json.RawMessage, error) {
		if s.d.Tracer == nil {
			return h(ctx, call)
		}
		ctx, tid, sid, end := s.d.Tracer.Start(ctx, call.Trace, "peas."+tool)
		defer end()
		if len(tid) == 32 && len(sid) == 16 {
			ctx = context.WithValue(ctx, hopKey{}, hop{tid, sid})
		}
		return h(ctx, call)
	}
}

// hopIDs returns the trace and span ids of the current hop's span, nil
// when tracing is off.
func hopIDs(ctx context.Context) (traceID, spanID *string) {
	h, ok := ctx.Value(hopKey{}).(hop)
	if !ok {
		return nil, nil
	}
	return &h.traceID, &h.spanID
}

// endTrace ends the chain's root span once the chain is over: it went no
// further than watch, the in-car warnings went out, the operator declined
// or the approval expired, or the chain stopped. A chain waiting for its
// approval keeps its root open.
func (s *System) endTrace(ch *Chain) {
	if s.d.Tracer == nil || ch.Trace == "" || ch.Stage == StagePending {
		return
	}
	s.d.Tracer.End(ch.Trace)
}
