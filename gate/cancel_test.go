package gate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/example"
	"github.com/custody-dev/custody/gate"
)

// cancelKey carries, to the tools below, the cancel func of the caller's
// context: the tool cancels its own caller while it runs.
type cancelKey struct{}

// cancelsCaller is a handler that cancels its caller mid-run and then
// ends as a handler does when its context ends.
func cancelsCaller(ctx context.Context, _ custody.Call) (json.RawMessage, error) {
	ctx.Value(cancelKey{}).(context.CancelFunc)()
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestCancelledCallIsRecorded: a call whose caller goes away while the
// tool runs still ends with a ledger entry, and the caller is told what
// happened to the call, not that the ledger is unavailable.
func TestCancelledCallIsRecorded(t *testing.T) {
	h := newHarness(t)
	tools := []gate.Tool{
		{Spec: spec("gone_read", custody.Read), Handler: cancelsCaller},
		{Spec: spec("gone_write", custody.Write), Handler: cancelsCaller},
	}
	gw, err := gate.New(gate.Config{Registry: h.reg, Ledger: h.db, Approvals: h.svc, State: h.db, Now: h.clk.Now, Logger: discard()},
		example.EnvelopeID, tools)
	if err != nil {
		t.Fatal(err)
	}
	for tool, want := range map[string]struct{ kind, outcome string }{
		"gone_read":  {custody.KindCallCancelled, ""},
		"gone_write": {custody.KindCallOutcomeUnknown, custody.OutcomeUnknown},
	} {
		t.Run(tool, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ctx = context.WithValue(ctx, cancelKey{}, cancel)
			trace := "t-" + tool
			_, err := gw.Call(ctx, custody.Call{Trace: trace, Tool: tool, Args: json.RawMessage(`{"s":"x"}`), Actor: "agent-1", Via: "test"})
			if ctx.Err() == nil {
				t.Fatal("the tool did not cancel its caller")
			}
			ce := wantKind(t, err, custody.ErrorKind(err))
			if ce.Message == "evidence ledger unavailable" || ce.Receipt == nil {
				t.Fatalf("a cancelled call: %v, receipt %v; want its outcome on the ledger", err, ce.Receipt)
			}
			e := h.entry(t, ce.Receipt.Seq)
			if e.Trace != trace || e.Kind != want.kind {
				t.Errorf("receipt names %s entry of trace %s, want %s of %s", e.Kind, e.Trace, want.kind, trace)
			}
			recorded := strings.Contains(string(e.Body), `"outcome":"unknown"`)
			if ce.Outcome != want.outcome || custody.DetailOf(err).Outcome != want.outcome || recorded != (want.outcome != "") {
				t.Errorf("outcome %q (detail %q), body %s; want %q", ce.Outcome, custody.DetailOf(err).Outcome, e.Body, want.outcome)
			}
			h.verify(t)
		})
	}
}

// TestWriteWithoutAnswerIsOutcomeUnknown: a tool with a side effect that
// overran its deadline, or whose handler says its request may have gone
// out before the answer was lost, has an unknown outcome; a READ that
// lost its answer simply failed.
func TestWriteWithoutAnswerIsOutcomeUnknown(t *testing.T) {
	h := newHarness(t)
	lost := func(context.Context, custody.Call) (json.RawMessage, error) {
		return nil, fmt.Errorf("upstream x: tools/call: connection closed: %w", gate.ErrOutcomeUnknown)
	}
	hangs := func(ctx context.Context, _ custody.Call) (json.RawMessage, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	tools := []gate.Tool{
		{Spec: spec("lost_write", custody.Write), Handler: lost},
		{Spec: spec("lost_read", custody.Read), Handler: lost},
		{Spec: spec("hung_write", custody.Write), Handler: hangs, Deadline: 20 * time.Millisecond},
		{Spec: spec("hung_read", custody.Read), Handler: hangs, Deadline: 20 * time.Millisecond},
	}
	gw, err := gate.New(gate.Config{Registry: h.reg, Ledger: h.db, Approvals: h.svc, State: h.db, Now: h.clk.Now, Logger: discard()},
		example.EnvelopeID, tools)
	if err != nil {
		t.Fatal(err)
	}
	for tool, want := range map[string]string{
		"lost_write": custody.KindCallOutcomeUnknown, "hung_write": custody.KindCallOutcomeUnknown,
		"lost_read": custody.KindCallFailed, "hung_read": custody.KindCallFailed,
	} {
		t.Run(tool, func(t *testing.T) {
			_, err := gw.Call(context.Background(), custody.Call{Trace: "t-" + tool, Tool: tool, Args: json.RawMessage(`{"s":"x"}`), Actor: "agent-1", Via: "test"})
			ce := wantKind(t, err, custody.EUNAVAILABLE)
			if ce.Receipt == nil {
				t.Fatalf("no receipt: %v", err)
			}
			if e := h.entry(t, ce.Receipt.Seq); e.Kind != want {
				t.Errorf("entry %s, want %s", e.Kind, want)
			}
			if unknown := want == custody.KindCallOutcomeUnknown; (ce.Outcome == custody.OutcomeUnknown) != unknown {
				t.Errorf("outcome %q for %s", ce.Outcome, want)
			}
		})
	}
	h.verify(t)
}

// TestCancelledBeforeItRuns: a caller that has gone before the tool runs
// gets no run, and the call still ends on the ledger, as cancelled: a
// WRITE's intent is recorded, and its end says the tool never ran.
func TestCancelledBeforeItRuns(t *testing.T) {
	h := newHarness(t)
	for _, tool := range []string{"echo", "put"} {
		t.Run(tool, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			before := h.ran(tool)
			_, err := h.gw.Call(ctx, custody.Call{Trace: "t-gone-" + tool, Tool: tool, Args: json.RawMessage(`{"n":1}`), Actor: "agent-1", Via: "test"})
			ce := wantKind(t, err, custody.EUNAVAILABLE)
			if h.ran(tool) != before {
				t.Errorf("the tool ran for a caller that had gone")
			}
			if ce.Receipt == nil || ce.Outcome != "" {
				t.Fatalf("%v: receipt %v, outcome %q; want an entry and no doubt", err, ce.Receipt, ce.Outcome)
			}
			if e := h.entry(t, ce.Receipt.Seq); e.Kind != custody.KindCallCancelled {
				t.Errorf("entry %s, want %s", e.Kind, custody.KindCallCancelled)
			}
		})
	}
	h.verify(t)
}
