package gate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
)

// BenchmarkLookupsOnGrowingLedger measures the calls that look something
// up before they run (a held action asking for its approval, the approved
// action finding and using it, a custody link to a ref) on a fresh ledger,
// then grows the ledger the way real traffic does, in commits of mixed
// sizes, to a million entries, and measures them again. large/fresh is
// what the ledger's size costs them:
//
//	go test -run '^$' -bench LookupsOnGrowingLedger -benchtime 1x -timeout 30m ./gate/
func BenchmarkLookupsOnGrowingLedger(b *testing.B) {
	const (
		grow    = 1_000_000
		rounds  = 1000
		workers = 16
	)
	h := newHarness(b)
	lookupRounds(b, h, "warm", rounds/4, workers) // warm the caches and the pools
	fresh := lookupRounds(b, h, "fresh", rounds, workers)
	start := time.Now()
	n := growLedger(b, h, grow)
	b.Logf("grew the ledger by %d entries in %s (%.0f entries/s)", n, time.Since(start).Round(time.Second), float64(n)/time.Since(start).Seconds())
	large := lookupRounds(b, h, "large", rounds, workers)
	b.ReportMetric(fresh, "fresh_calls/s")
	b.ReportMetric(large, "large_calls/s")
	b.ReportMetric(large/fresh, "large/fresh")
	b.ReportMetric(float64(h.db.Size()), "entries")
}

// lookupRounds runs rounds of lookup calls, each in a trace of its own,
// from workers goroutines, and returns the lookup calls per second: a
// held call (pending_approval), the operator's decision, the approved
// call, a call producing a ref and a call linking to it.
func lookupRounds(b *testing.B, h *harness, name string, rounds, workers int) float64 {
	b.Helper()
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(rounds); i = next.Add(1) {
				trace := fmt.Sprintf("%s-%d", name, i)
				if err := lookupRound(ctx, h, trace); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return float64(3*rounds) / time.Since(start).Seconds()
}

func lookupRound(ctx context.Context, h *harness, trace string) error {
	_, err := h.call(trace, "post_announcement", post)
	id := custody.AsError(err).ApprovalRequestID
	if custody.ErrorKind(err) != custody.EPENDING || id == "" {
		return fmt.Errorf("held call: %v", err)
	}
	if _, err := h.svc.Decide(ctx, id, approval.Decision{Decision: approval.Approve, Operator: "op-1"}); err != nil {
		return fmt.Errorf("decide: %w", err)
	}
	if _, err := h.call(trace, "post_announcement", post); err != nil {
		return fmt.Errorf("approved call: %w", err)
	}
	if _, err := h.call(trace, "make_brief", `{"s":"1"}`); err != nil {
		return fmt.Errorf("make brief: %w", err)
	}
	if _, err := h.call(trace, "cite_brief", `{"brief_id":"B-1"}`); err != nil {
		return fmt.Errorf("linked call: %w", err)
	}
	return nil
}

// growLedger appends about n entries like a gateway's, in commits of
// mixed sizes: bursts from 1, 8, 64 and 256 concurrent appenders, each
// burst appending in proportion to its appenders.
func growLedger(b *testing.B, h *harness, n int) int64 {
	b.Helper()
	ctx := context.Background()
	var total atomic.Int64
	body := json.RawMessage(`{"tool":"post_announcement","arguments":{"channel":"ops","message":"DEPLOY AT 5"},"output":{"ok":true},"elapsed_us":12}`)
	for cycle := 0; total.Load() < int64(n); cycle++ {
		for _, appenders := range []int{1, 8, 64, 256} {
			per := 100
			var wg sync.WaitGroup
			for a := range appenders {
				wg.Go(func() {
					for i := range per {
						trace := fmt.Sprintf("grow-%d-%d-%d", cycle, appenders, a)
						e := custody.Entry{Kind: custody.KindCallSucceeded, Trace: trace, Actor: "agent-1", Body: body,
							Refs: map[string]string{approval.RefApproval: fmt.Sprintf("ap-%d-%d-%d-%d", cycle, appenders, a, i), "brief_id": fmt.Sprint("B-", i)}}
						if _, err := h.db.Append(ctx, e); err != nil {
							b.Error(err)
							return
						}
						total.Add(1)
					}
				})
			}
			wg.Wait()
		}
	}
	return total.Load()
}
