package gate_test

import (
	"context"
	"encoding/json"
	"testing"

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
	for _, tool := range []string{"gone_read", "gone_write"} {
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
			if e.Trace != trace || e.Kind != custody.KindCallFailed {
				t.Errorf("receipt names %s entry of trace %s, want %s of %s", e.Kind, e.Trace, custody.KindCallFailed, trace)
			}
			h.verify(t)
		})
	}
}
