package assure

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkRun measures whole runs with the scripted targets: every trace
// is a full ward round through the agent loop, the gateway and a durable
// SQLite ledger (fsync per group commit), evaluated and packed. It reports
// traces per minute:
//
//	go test -run '^$' -bench Run -benchtime 3x ./assure/
func BenchmarkRun(b *testing.B) {
	for _, target := range []string{targetCareful, targetNaive} {
		b.Run(target, func(b *testing.B) {
			traces := 0
			var elapsed time.Duration
			for i := range b.N {
				start := time.Now()
				res, err := Run(context.Background(), Config{OpenStore: openTestStore, Envelope: WardRoundEnvelope(), Target: target, Seed: uint64(i + 1),
					Cases: 10, Repeat: 3, Out: filepath.Join(b.TempDir(), fmt.Sprint("pack", i))})
				if err != nil {
					b.Fatal(err)
				}
				elapsed += time.Since(start)
				traces += len(res.Traces)
			}
			b.ReportMetric(float64(traces)/elapsed.Minutes(), "traces/min")
			b.ReportMetric(float64(traces)/float64(b.N), "traces/run")
		})
	}
}
