package gate_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/custody-dev/custody"
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
			args := json.RawMessage(bc.args)
			b.SetParallelism(32)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					if _, err := h.gw.Call(ctx, custody.Call{Tool: bc.tool, Args: args, Actor: "bench"}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}
