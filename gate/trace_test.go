package gate_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/gate"
)

// traced is a harness whose gateway traces every call into a recorder.
func traced(t *testing.T) (*harness, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return newHarnessWith(t, harnessOptions{dir: t.TempDir(), tracer: tp.Tracer("test")}), rec
}

// callerSpan is the span a caller sent in its traceparent header.
func callerSpan(t *testing.T) (context.Context, trace.SpanContext) {
	t.Helper()
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
	return trace.ContextWithRemoteSpanContext(context.Background(), sc), sc
}

// callTree returns the call span and the names of its children in the
// order they started.
func callTree(t *testing.T, rec *tracetest.SpanRecorder) (sdktrace.ReadOnlySpan, []sdktrace.ReadOnlySpan) {
	t.Helper()
	var root sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == gate.SpanCall {
			if root != nil {
				t.Fatalf("two %s spans", gate.SpanCall)
			}
			root = s
		}
	}
	if root == nil {
		t.Fatalf("no %s span among %d", gate.SpanCall, len(rec.Ended()))
	}
	var kids []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Parent().SpanID() == root.SpanContext().SpanID() {
			kids = append(kids, s)
		}
	}
	slices.SortFunc(kids, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	return root, kids
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

func spanAttr(s sdktrace.ReadOnlySpan, key string) attribute.Value {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

func TestCallSpanContinuesCallersTrace(t *testing.T) {
	h, rec := traced(t)
	ctx, caller := callerSpan(t)
	res, err := h.gw.Call(ctx, custody.Call{Trace: "t-span", Tool: "echo", Args: json.RawMessage(`{"n":1}`), Actor: "agent-1", Via: "test"})
	if err != nil {
		t.Fatal(err)
	}
	root, kids := callTree(t, rec)
	if root.SpanContext().TraceID() != caller.TraceID() || root.Parent().SpanID() != caller.SpanID() {
		t.Errorf("call span is in trace %s under %s; want the caller's %s under %s",
			root.SpanContext().TraceID(), root.Parent().SpanID(), caller.TraceID(), caller.SpanID())
	}
	want := []string{gate.SpanValidate, gate.SpanApprove, gate.SpanRecord, gate.SpanRun, gate.SpanValidate, gate.SpanRecord}
	if got := names(kids); !slices.Equal(got, want) {
		t.Errorf("child spans %v, want %v", got, want)
	}
	if got := spanAttr(root, gate.AttrTool).AsString(); got != "echo" {
		t.Errorf("tool %q", got)
	}
	if got := spanAttr(root, gate.AttrOutcome).AsString(); got != gate.OutcomeSucceeded {
		t.Errorf("outcome %q", got)
	}
	if got := spanAttr(root, gate.AttrSeq).AsInt64(); got != res.Receipt.Seq || got == 0 {
		t.Errorf("seq %d, want the receipt's %d", got, res.Receipt.Seq)
	}
	if root.Status().Code == codes.Error {
		t.Errorf("status %v on success", root.Status())
	}
	if !root.EndTime().After(root.StartTime()) {
		t.Error("the call span has no duration")
	}
}

func TestCallSpanOnRefusal(t *testing.T) {
	h, rec := traced(t)
	_, err := h.call("t-bad", "echo", `{"n":"one"}`)
	ce := wantKind(t, err, custody.EINVALID)
	root, kids := callTree(t, rec)
	if got, want := names(kids), []string{gate.SpanValidate, gate.SpanRecord}; !slices.Equal(got, want) {
		t.Errorf("child spans %v, want %v", got, want)
	}
	if kids[0].Status().Code != codes.Error {
		t.Errorf("the validate span's status is %v, want an error", kids[0].Status())
	}
	if root.Status().Code != codes.Error {
		t.Errorf("the call span's status is %v, want an error", root.Status())
	}
	if got := spanAttr(root, gate.AttrOutcome).AsString(); got != gate.OutcomeRefused {
		t.Errorf("outcome %q", got)
	}
	if got := spanAttr(root, gate.AttrKind).AsString(); got != custody.EINVALID {
		t.Errorf("error kind %q", got)
	}
	if got := spanAttr(root, gate.AttrSeq).AsInt64(); ce.Receipt == nil || got != ce.Receipt.Seq {
		t.Errorf("seq %d, want the refusal's receipt %v", got, ce.Receipt)
	}
}

func TestCallSpanOnBreachAndPending(t *testing.T) {
	h, rec := traced(t)
	if _, err := h.call("t-breach", "broken", `{}`); err == nil {
		t.Fatal("a breaching output passed")
	}
	root, kids := callTree(t, rec)
	if root.Status().Code != codes.Error {
		t.Errorf("breach: status %v", root.Status())
	}
	if got := names(kids); len(got) != 6 || got[4] != gate.SpanValidate {
		t.Errorf("breach: child spans %v", got)
	} else if kids[4].Status().Code != codes.Error {
		t.Errorf("breach: the output validate span's status is %v", kids[4].Status())
	}

	h, rec = traced(t)
	_, err := h.call("t-sign", "sign", `{"message":"HELLO"}`)
	wantKind(t, err, custody.EPENDING)
	root, _ = callTree(t, rec)
	if got := spanAttr(root, gate.AttrOutcome).AsString(); got != gate.OutcomePending {
		t.Errorf("pending: outcome %q", got)
	}
	if root.Status().Code == codes.Error {
		t.Errorf("pending: a held call is not a failure, status %v", root.Status())
	}
}
