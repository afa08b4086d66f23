package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/gate"
)

// durationBuckets are the upper bounds, in seconds, of the call duration
// histogram.
func durationBuckets() []float64 {
	return []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
}

// Metrics counts calls for the Prometheus endpoint. It is safe for
// concurrent use; every front door (HTTP, MCP) reports to the same one.
type Metrics struct {
	// governed says whether a tool name may be a label value.
	governed func(tool string) bool
	mu       sync.Mutex
	calls    map[callKey]uint64
	buckets  []float64
	counts   []uint64 // cumulative per bucket, then +Inf
	sum      float64
	n        uint64
}

type callKey struct{ tool, outcome string }

// unknownTool is the tool label of every call of a tool that is not
// governed.
const unknownTool = "unknown"

// NewMetrics returns empty metrics. governed says which tool names are
// label values: a call of any other name counts as tool="unknown", so
// that a caller cannot add series by inventing names. With a nil
// governed, every call counts as "unknown".
func NewMetrics(governed func(tool string) bool) *Metrics {
	b := durationBuckets()
	return &Metrics{governed: governed, calls: map[callKey]uint64{}, buckets: b, counts: make([]uint64, len(b)+1)}
}

// GovernedBy returns the tools gw governs, for NewMetrics.
func GovernedBy(gw *gate.Gateway) func(tool string) bool {
	return func(tool string) bool {
		_, ok := gw.Tool(tool)
		return ok
	}
}

// ObserveCall records one call of tool that ended with outcome ("ok" or an
// error kind) after d.
func (m *Metrics) ObserveCall(tool, outcome string, d time.Duration) {
	if m.governed == nil || !m.governed(tool) {
		tool = unknownTool
	}
	sec := d.Seconds()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls[callKey{tool, outcome}]++
	for i, le := range m.buckets {
		if sec <= le {
			m.counts[i]++
		}
	}
	m.counts[len(m.buckets)]++
	m.sum += sec
	m.n++
}

// outcome returns the outcome label of a call's error: "ok" for nil, else
// its kind.
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	return custody.ErrorKind(err)
}

// writeCalls writes the call counter and histogram in Prometheus text
// format.
func (m *Metrics) writeCalls(w io.Writer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	keys := make([]callKey, 0, len(m.calls))
	for k := range m.calls {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b callKey) int {
		return strings.Compare(a.tool+"\x00"+a.outcome, b.tool+"\x00"+b.outcome)
	})
	fmt.Fprintln(w, "# HELP custody_calls_total Tool calls through the gateway by tool and outcome.")
	fmt.Fprintln(w, "# TYPE custody_calls_total counter")
	for _, k := range keys {
		fmt.Fprintf(w, "custody_calls_total{tool=%s,outcome=%s} %d\n", label(k.tool), label(k.outcome), m.calls[k])
	}
	fmt.Fprintln(w, "# HELP custody_call_duration_seconds Time from receiving a call to its answer.")
	fmt.Fprintln(w, "# TYPE custody_call_duration_seconds histogram")
	for i, le := range m.buckets {
		fmt.Fprintf(w, "custody_call_duration_seconds_bucket{le=\"%s\"} %d\n", strconv.FormatFloat(le, 'g', -1, 64), m.counts[i])
	}
	fmt.Fprintf(w, "custody_call_duration_seconds_bucket{le=\"+Inf\"} %d\n", m.counts[len(m.buckets)])
	fmt.Fprintf(w, "custody_call_duration_seconds_sum %s\n", strconv.FormatFloat(m.sum, 'g', -1, 64))
	fmt.Fprintf(w, "custody_call_duration_seconds_count %d\n", m.n)
}

// label quotes a Prometheus label value.
func label(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(v) + `"`
}

// gauge writes one gauge; a failed read is skipped and logged, so one
// unavailable store does not hide the other metrics.
func (s *Server) gauge(ctx context.Context, w io.Writer, name, help string, read func(context.Context) (int64, error)) {
	v, err := read(ctx)
	if err != nil {
		s.log.Error("metrics: read gauge", "metric", name, "err", err)
		return
	}
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s %d\n", name, help, name, name, v)
}

// handleMetrics serves GET /metrics in Prometheus text format. It needs no
// token: it holds counts only, never arguments or identities.
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	s.metrics.writeCalls(w)
	s.gauge(r.Context(), w, "custody_ledger_entries", "Entries on the evidence ledger.", s.ledgerEntries)
	if s.cfg.Commits != nil {
		fmt.Fprint(w, "# HELP custody_ledger_commits_total Transactions committed to the store by this process; concurrent appends share them.\n"+
			"# TYPE custody_ledger_commits_total counter\n")
		fmt.Fprintf(w, "custody_ledger_commits_total %d\n", s.cfg.Commits())
	}
	s.gauge(r.Context(), w, "custody_approvals_pending", "Approval requests waiting for a decision.", s.pendingApprovals)
	if s.cfg.Witnesses != nil {
		s.writeWitnesses(w)
	}
	writeRuntime(w)
}

// writeRuntime writes the Go runtime's own counters under their usual
// Prometheus names: the bytes the process allocated, its collections.
func writeRuntime(w io.Writer) {
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(sample)
	fmt.Fprintf(w, "# HELP go_memstats_alloc_bytes_total Total number of bytes allocated on the heap, even if freed.\n"+
		"# TYPE go_memstats_alloc_bytes_total counter\ngo_memstats_alloc_bytes_total %d\n", sample[0].Value.Uint64())
	fmt.Fprintf(w, "# HELP go_gc_cycles_total Garbage collection cycles completed.\n"+
		"# TYPE go_gc_cycles_total counter\ngo_gc_cycles_total %d\n", sample[1].Value.Uint64())
}

func (s *Server) ledgerEntries(ctx context.Context) (int64, error) {
	h, err := s.cfg.Ledger.Head(ctx)
	return h.Seq, err
}

func (s *Server) pendingApprovals(ctx context.Context) (int64, error) {
	list, err := s.cfg.Approvals.List(ctx, custody.ApprovalPending)
	return int64(len(list)), err
}
