package gate_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/gate"
)

// BenchmarkConditions measures what two CEL conditions add to a call: the
// same READ tool without conditions and with a denyWhen and an allowWhen,
// one call at a time, on a ledger that only prepares its entries (see
// preparingLedger), so that the difference is the conditions' cost:
//
//	go test -run '^$' -bench Conditions -count 6 ./gate/
func BenchmarkConditions(b *testing.B) {
	h := newHarness(b)
	led := &preparingLedger{Ledger: h.db}
	svc, err := approval.New(approval.Config{Store: h.db, Ledger: led})
	if err != nil {
		b.Fatal(err)
	}
	plain, ruled := spec("plain", custody.Read), spec("ruled", custody.Read)
	ruled.Conditions = []custody.Condition{
		{When: custody.DenyWhen, Expr: "args.n > 1000"},
		{When: custody.AllowWhen, Expr: "args.s.startsWith('bench') || agent.id == 'ops'"},
	}
	gw, err := gate.New(gate.Config{Registry: h.reg, Ledger: led, Approvals: svc, State: h.db, Logger: discard()},
		"bench", []gate.Tool{{Spec: plain, Handler: ok}, {Spec: ruled, Handler: ok}})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, tool string }{{"none", "plain"}, {"two", "ruled"}} {
		b.Run(bc.name, func(b *testing.B) {
			call := custody.Call{Trace: "bench", Tool: bc.tool, Args: json.RawMessage(`{"n":7,"s":"bench call"}`), Actor: "bench"}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := gw.Call(ctx, call); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
