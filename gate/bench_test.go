package gate_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/example"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/ledger"
)

// BenchmarkGatewayCall measures durable governed calls through the whole
// pipeline on a real SQLite ledger, with 32 callers per CPU:
//
//	go test -run '^$' -bench GatewayCall -benchtime 3s ./gate/
func BenchmarkGatewayCall(b *testing.B) {
	for _, bc := range []struct{ name, tool, args string }{
		{"READ", "echo", `{"n":1,"s":"bench"}`},
		{"WRITE", "put", `{"n":2,"s":"bench"}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := newHarness(b)
			callParallel(b, h.gw, custody.Call{Tool: bc.tool, Args: json.RawMessage(bc.args), Actor: "bench"})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}

// BenchmarkGatewayCPU measures what a call costs the processors outside
// the store's writer: the gateway's steps and an append's work in the
// caller (the entry's canonical form and body hash), on a ledger that
// does nothing more. Under load this work stands between a durable
// commit and the caller's next append, so it decides how full the next
// group commit is:
//
//	go test -run '^$' -bench GatewayCPU -benchtime 2s ./gate/
func BenchmarkGatewayCPU(b *testing.B) {
	for _, bc := range []struct{ name, tool, args string }{
		{"READ", "cpu_read", `{"zone":"UTC"}`},
		{"WRITE", "cpu_write", `{"title":"bench","text":"a note written by the benchmark"}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := newHarness(b)
			led := &preparingLedger{Ledger: h.db}
			svc, err := approval.New(approval.Config{Store: h.db, Ledger: led})
			if err != nil {
				b.Fatal(err)
			}
			tools := example.Tools(h.db, nil)
			tools = append(tools, example.BenchTools("cpu_read", "cpu_write")...)
			gw, err := gate.New(gate.Config{Registry: h.reg, Ledger: led, Approvals: svc, State: h.db, Logger: discard()}, example.EnvelopeID, tools)
			if err != nil {
				b.Fatal(err)
			}
			callParallel(b, gw, custody.Call{Tool: bc.tool, Args: json.RawMessage(bc.args), Actor: "bench", Via: "bench"})
		})
	}
}

// callParallel makes b.N calls through gw from 32 callers per CPU.
func callParallel(b *testing.B, gw *gate.Gateway, call custody.Call) {
	b.SetParallelism(32)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if _, err := gw.Call(ctx, call); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
}

// preparingLedger does the caller's part of an append, as the SQLite
// store does before handing the entry to its writer, and numbers the
// entries; it keeps nothing.
type preparingLedger struct {
	custody.Ledger
	seq atomic.Int64
}

type preparation struct {
	z ledger.Canonicalizer
	p ledger.Prepared
}

func (l *preparingLedger) Append(_ context.Context, e custody.Entry) (custody.Entry, error) {
	p := &preparation{}
	if err := p.z.Prepare(&p.p, &e); err != nil {
		return custody.Entry{}, err
	}
	e.Seq = l.seq.Add(1)
	return e, nil
}

// Commit prepares e as Append does; the CPU tools change no state.
func (l *preparingLedger) Commit(ctx context.Context, e custody.Entry, changes ...custody.Change) (custody.Entry, error) {
	if len(changes) > 0 {
		return custody.Entry{}, custody.Errorf(custody.EINVALID, "the preparing ledger keeps no state")
	}
	return l.Append(ctx, e)
}
