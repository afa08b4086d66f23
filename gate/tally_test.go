package gate_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/gate"
)

// readCounting is a state store that counts the reads of each namespace.
type readCounting struct {
	custody.StateStore
	mu    sync.Mutex
	reads map[string]int
}

func (s *readCounting) State(ctx context.Context, ns, key string) (json.RawMessage, error) {
	s.mu.Lock()
	s.reads[ns]++
	s.mu.Unlock()
	return s.StateStore.State(ctx, ns, key)
}

func (s *readCounting) read(ns string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads[ns]
}

// secondGateway is another gateway on h's store, as a second instance on
// a shared store is, offering "limited" (a READ tool with a calls budget
// of 2) and counting its runs; its state reads are counted.
func secondGateway(t *testing.T, h *harness) (*gate.Gateway, *readCounting, *atomic.Int64) {
	t.Helper()
	svc, err := approval.New(approval.Config{Store: h.db, Ledger: h.db, Now: h.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	state := &readCounting{StateStore: h.db, reads: map[string]int{}}
	limited := spec("limited", custody.Read)
	limited.MaxCallsPerTrace = 2
	runs := &atomic.Int64{}
	handler := func(ctx context.Context, c custody.Call) (json.RawMessage, error) {
		runs.Add(1)
		return ok(ctx, c)
	}
	gw, err := gate.New(gate.Config{Registry: h.reg, Ledger: h.db, Approvals: svc, State: state, Now: h.clk.Now, Logger: discard()},
		"second", []gate.Tool{{Spec: limited, Handler: handler}})
	if err != nil {
		t.Fatal(err)
	}
	return gw, state, runs
}

// TestBudgetReadOncePerTrace: a trace's calls budget is read from the
// store once, by its first call; the gateway's own commits keep the count
// after that, and a trace the gateway made for the call is not read at
// all. The budget holds exactly as before.
func TestBudgetReadOncePerTrace(t *testing.T) {
	h := newHarness(t)
	gw, state, runs := secondGateway(t, h)
	ctx := context.Background()
	call := func(trace string) (custody.Result, error) {
		return gw.Call(ctx, custody.Call{Trace: trace, Tool: "limited", Args: json.RawMessage(`{}`), Actor: "agent-1"})
	}
	for i := range 2 {
		if _, err := call("t-kept"); err != nil {
			t.Fatalf("call %d within the budget: %v", i+1, err)
		}
	}
	_, err := call("t-kept")
	if custody.ErrorKind(err) != custody.EDENIED || !strings.Contains(custody.ErrorMessage(err), "maximum_calls_per_trace") {
		t.Fatalf("third call: %v, want the calls budget's denial", err)
	}
	if runs.Load() != 2 {
		t.Fatalf("the tool ran %d times, want 2: the third call is refused before it runs", runs.Load())
	}
	if n := state.read("budget"); n != 1 {
		t.Fatalf("the budget was read %d times for three calls of one trace, want 1", n)
	}
	res, err := call("")
	if err != nil {
		t.Fatalf("a call in a new trace: %v", err)
	}
	if n := state.read("budget"); n != 1 {
		t.Fatalf("a call in a trace the gateway made read the budget (%d reads)", n)
	}
	if n := state.read("refusals"); n != 1 {
		t.Fatalf("the refusal budget was read %d times for three calls of one trace and one of a new one, want 1", n)
	}
	if _, err := call(res.Trace); err != nil {
		t.Fatalf("a second call in the trace the gateway made: %v", err)
	}
	_, err = call(res.Trace)
	if custody.ErrorKind(err) != custody.EDENIED {
		t.Fatalf("third call in the trace the gateway made: %v, want the calls budget's denial", err)
	}
	if n := state.read("budget"); n != 1 {
		t.Fatalf("calls in the trace the gateway made read the budget (%d reads in all)", n)
	}
}

// TestBudgetCommitDecidesOverAStaleCount: a count another instance spent
// is not in this gateway's tally until it reads the store again, so its
// pre-check lets the call go on; the conditional increment committed with
// the call's entry refuses it. A count older than the tally's time, or
// one a refused commit left in doubt, is read again, and the pre-check
// refuses before the tool runs.
func TestBudgetCommitDecidesOverAStaleCount(t *testing.T) {
	h := newHarness(t)
	gw, _, runs := secondGateway(t, h)
	ctx := context.Background()
	call := func(gw *gate.Gateway, trace string) error {
		_, err := gw.Call(ctx, custody.Call{Trace: trace, Tool: "limited", Args: json.RawMessage(`{}`), Actor: "agent-1"})
		return err
	}
	spent := func(err error) bool {
		return custody.ErrorKind(err) == custody.EDENIED && strings.Contains(custody.ErrorMessage(err), "maximum_calls_per_trace")
	}
	// Read again once older than the tally's time.
	if err := call(gw, "t-aged"); err != nil {
		t.Fatalf("first call: %v", err)
	}
	if err := call(h.gw, "t-aged"); err != nil {
		t.Fatalf("second call, at the other instance: %v", err)
	}
	h.clk.Add(2 * time.Second)
	if err := call(gw, "t-aged"); !spent(err) {
		t.Fatalf("third call, the count read again: %v, want the calls budget's denial", err)
	}
	if runs.Load() != 1 {
		t.Fatalf("the tool ran %d times at this instance, want 1: a count read again refuses before the tool runs", runs.Load())
	}
	// Within the tally's time the commit decides.
	if err := call(gw, "t-stale"); err != nil {
		t.Fatalf("first call: %v", err)
	}
	if err := call(h.gw, "t-stale"); err != nil {
		t.Fatalf("second call, at the other instance: %v", err)
	}
	if err := call(gw, "t-stale"); !spent(err) {
		t.Fatalf("third call on a stale count: %v, want the calls budget's denial from the commit", err)
	}
	if runs.Load() != 3 {
		t.Fatalf("the tool ran %d times at this instance, want 3: the stale pre-check let the READ run, and the commit withheld its output", runs.Load())
	}
	if got := h.entries(t, custody.Query{Trace: "t-stale", Kind: custody.KindCallSucceeded}); len(got) != 2 {
		t.Fatalf("%d calls succeeded in the trace, want 2", len(got))
	}
	if got := h.entries(t, custody.Query{Trace: "t-stale", Kind: custody.KindCallRefused}); len(got) != 1 {
		t.Fatalf("%d calls refused in the trace, want 1", len(got))
	}
	if err := call(gw, "t-stale"); !spent(err) {
		t.Fatalf("fourth call: %v, want the calls budget's denial", err)
	}
	if runs.Load() != 3 {
		t.Fatalf("the tool ran again after a refused commit (%d runs): the count it left in doubt must be read again", runs.Load())
	}
}

// TestRefusalBudgetCommitDecidesOverAStaleCount: refusals another
// instance counted after this gateway's tally read the count stop the
// call at its commit: its output is withheld and the denial names the
// refusal budget.
func TestRefusalBudgetCommitDecidesOverAStaleCount(t *testing.T) {
	h := newHarness(t)
	gw, _, runs := secondGateway(t, h)
	ctx := context.Background()
	call := func(gw *gate.Gateway, args string) error {
		_, err := gw.Call(ctx, custody.Call{Trace: "t-probe", Tool: "limited", Args: json.RawMessage(args), Actor: "agent-1"})
		return err
	}
	if err := call(gw, `{"x":1}`); custody.ErrorKind(err) != custody.EINVALID {
		t.Fatalf("malformed call: %v", err)
	}
	for i := 1; i < gate.DefaultMaxRefusalsPerTrace; i++ {
		if err := call(h.gw, `{"x":1}`); custody.ErrorKind(err) != custody.EINVALID {
			t.Fatalf("malformed call %d at the other instance: %v", i, err)
		}
	}
	spent := func(err error) bool {
		return custody.ErrorKind(err) == custody.EDENIED && strings.Contains(custody.ErrorMessage(err), "maximum_refusals_per_trace")
	}
	if err := call(gw, `{}`); !spent(err) {
		t.Fatalf("a valid call on a stale count: %v, want the refusal budget's denial from the commit", err)
	}
	if got := h.entries(t, custody.Query{Trace: "t-probe", Kind: custody.KindCallSucceeded}); len(got) != 0 {
		t.Fatalf("%d calls succeeded in a trace past its refusal budget", len(got))
	}
	if err := call(gw, `{}`); !spent(err) {
		t.Fatalf("the next call: %v, want the refusal budget's denial", err)
	}
	if runs.Load() != 1 {
		t.Fatalf("the tool ran %d times, want 1: after the refused commit the count is read again", runs.Load())
	}
}

// TestBudgetTallyUnderRace: many callers of a few traces at once, each
// trace's budget first read while its calls commit, end with exactly the
// budget's calls run and the refusals counted, the counts in the store.
func TestBudgetTallyUnderRace(t *testing.T) {
	h := newHarness(t)
	gw, _, runs := secondGateway(t, h)
	ctx := context.Background()
	traces := []string{"t-1", "t-2", "t-3", "t-4"}
	var wg sync.WaitGroup
	for i := range 48 {
		wg.Go(func() {
			_, _ = gw.Call(ctx, custody.Call{Trace: traces[i%len(traces)], Tool: "limited", Args: json.RawMessage(`{}`), Actor: "agent-1"})
		})
	}
	wg.Wait()
	for _, tr := range traces {
		if got := h.entries(t, custody.Query{Trace: tr, Kind: custody.KindCallSucceeded}); len(got) != 2 {
			t.Errorf("trace %s: %d calls succeeded, want 2", tr, len(got))
		}
		if doc, err := h.db.State(ctx, "budget", tr+"/limited"); err != nil || string(doc) != "2" {
			t.Errorf("trace %s: budget = %s, %v; want 2", tr, doc, err)
		}
	}
	// Once the counts are known, every further call is refused before it runs.
	before := runs.Load()
	for _, tr := range traces {
		if _, err := gw.Call(ctx, custody.Call{Trace: tr, Tool: "limited", Args: json.RawMessage(`{}`), Actor: "agent-1"}); custody.ErrorKind(err) != custody.EDENIED {
			t.Errorf("trace %s after its budget: %v, want denied", tr, err)
		}
	}
	if runs.Load() != before {
		t.Fatalf("the tool ran %d more times after every trace's budget was spent", runs.Load()-before)
	}
}
