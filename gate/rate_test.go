package gate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/store/postgres"
	"github.com/custody-dev/custody/store/postgres/pgtest"
)

// hammer makes n concurrent calls, returning how many ran and the
// rate-limit denials.
func hammer(n int, call func(i int) error) (okCalls int64, denied []*custody.Error, other []error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	var ran atomic.Int64
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			err := call(i)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ran.Add(1)
			case custody.ErrorKind(err) == custody.EDENIED && custody.AsError(err).RetryAfter > 0:
				denied = append(denied, custody.AsError(err))
			default:
				other = append(other, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	return ran.Load(), denied, other
}

// TestRateExact: 64 concurrent callers of a tool limited to 20 calls an
// hour: exactly 20 run, the rest are denied saying when to retry, and
// the next window takes calls again.
func TestRateExact(t *testing.T) {
	r := newRuled(t, nil, []custody.Rate{{Per: custody.PerTool, Calls: 20, Every: time.Hour}}, nil)
	r.clk.Add(15 * time.Minute) // 09:15: the window ends at 10:00
	okCalls, denied, other := hammer(64, func(i int) error { return r.call(fmt.Sprint("agent-", i), fmt.Sprint("t", i), `{"n":1}`) })
	if len(other) > 0 {
		t.Fatalf("unexpected errors: %v", other)
	}
	if okCalls != 20 || r.ran() != 20 || len(denied) != 44 {
		t.Fatalf("%d calls succeeded, %d ran, %d denied; want 20, 20, 44", okCalls, r.ran(), len(denied))
	}
	for _, d := range denied {
		if d.RetryAfter != 45*time.Minute || d.Receipt == nil {
			t.Fatalf("denial %q: retry after %s, receipt %v; want 45m and a receipt", d.Message, d.RetryAfter, d.Receipt)
		}
	}
	if got := custody.DetailOf(denied[0]).RetryAfter; got != 2700 {
		t.Errorf("detail retry_after = %d, want 2700", got)
	}
	r.clk.Add(45 * time.Minute)
	if err := r.call("agent-0", "t0", `{"n":1}`); err != nil {
		t.Fatalf("a call in the next window: %v", err)
	}
}

// TestRatePerAgent: a per-agent limit counts each agent apart; two
// limits on one tool both hold.
func TestRatePerAgent(t *testing.T) {
	r := newRuled(t, nil, []custody.Rate{
		{Per: custody.PerAgent, Calls: 2, Every: time.Minute},
		{Per: custody.PerTrace, Calls: 3, Every: time.Hour},
	}, nil)
	for _, a := range []string{"ann", "ann", "bob"} {
		if err := r.call(a, "t1", `{"n":1}`); err != nil {
			t.Fatalf("%s: %v", a, err)
		}
	}
	wantKind(t, r.call("ann", "t2", `{"n":1}`), custody.EDENIED)
	wantKind(t, r.call("bob", "t1", `{"n":1}`), custody.EDENIED) // the trace's 3 an hour
	if err := r.call("bob", "t2", `{"n":1}`); err != nil {
		t.Fatalf("bob in another trace: %v", err)
	}
}

// pgRated is one gateway over the PostgreSQL store at url offering tool
// "t" limited to calls runs an hour per agent, counting its runs in ran.
func pgRated(t *testing.T, url, keyFile string, calls int, ran *atomic.Int64) *gate.Gateway {
	t.Helper()
	ctx := context.Background()
	db, err := postgres.Open(ctx, url, postgres.Options{KeyFile: keyFile})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	svc, err := approval.New(approval.Config{Store: db, Ledger: db})
	if err != nil {
		t.Fatal(err)
	}
	s := spec("t", custody.Read)
	s.Rates = []custody.Rate{{Per: custody.PerAgent, Calls: calls, Every: time.Hour}}
	h := func(ctx context.Context, c custody.Call) (json.RawMessage, error) {
		ran.Add(1)
		return ok(ctx, c)
	}
	// One fixed clock: the calls cannot straddle two windows.
	now := func() time.Time { return time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC) }
	gw, err := gate.New(gate.Config{Registry: loadRegistry(t), Ledger: db, Approvals: svc, State: db, Logger: discard(), Now: now},
		"pg-rate-test", []gate.Tool{{Spec: s, Handler: h}})
	if err != nil {
		t.Fatal(err)
	}
	return gw
}

// TestRateAcrossInstances: three gateways sharing one PostgreSQL store
// share each window of a rate limit exactly: of 64 concurrent calls of
// one agent spread over them, exactly the limit run.
func TestRateAcrossInstances(t *testing.T) {
	url := pgtest.URL(t)
	key := filepath.Join(t.TempDir(), "signing.key")
	var ran atomic.Int64
	gws := []*gate.Gateway{pgRated(t, url, key, 10, &ran), pgRated(t, url, key, 10, &ran), pgRated(t, url, key, 10, &ran)}
	agent := "agent-1"
	okCalls, denied, other := hammer(64, func(i int) error {
		_, err := gws[i%3].Call(context.Background(), custody.Call{Trace: fmt.Sprint("t", i), Tool: "t", Args: json.RawMessage(`{"n":1}`), Actor: agent})
		return err
	})
	if len(other) > 0 {
		t.Fatalf("unexpected errors: %v", other)
	}
	if okCalls != 10 || ran.Load() != 10 || len(denied) != 54 {
		t.Fatalf("%d calls succeeded, %d ran, %d denied; want 10, 10, 54", okCalls, ran.Load(), len(denied))
	}
}

// rateRows counts the rate windows kept in the store.
func rateRows(t *testing.T, st custody.StateStore) int {
	t.Helper()
	docs, err := st.States(context.Background(), "rate")
	if err != nil {
		t.Fatal(err)
	}
	return len(docs)
}

// TestRatePrunedStaysExact: pruning the store's rate windows never
// touches a window a limit still counts in: a call past the limit is
// still denied after a prune, the window's row goes only once it ended a
// window ago, and the limit holds in the windows after as before.
func TestRatePrunedStaysExact(t *testing.T) {
	r := newRuled(t, nil, []custody.Rate{{Per: custody.PerAgent, Calls: 2, Every: time.Hour}}, nil)
	ctx := context.Background()
	prune := func(want int64) {
		t.Helper()
		n, err := r.db.PruneRates(ctx, r.clk.Now())
		if err != nil || n != want {
			t.Fatalf("prune at %s: %d, %v; want %d pruned", r.clk.Now().Format("15:04"), n, err, want)
		}
	}
	window := func(at string) {
		t.Helper()
		for i := range 2 {
			if err := r.call("agent-1", "t1", `{"n":1}`); err != nil {
				t.Fatalf("%s: call %d within the limit: %v", at, i, err)
			}
		}
		prune(0)
		if err := r.call("agent-1", "t1", `{"n":1}`); custody.ErrorKind(err) != custody.EDENIED {
			t.Fatalf("%s: the call past the limit after a prune: %v, want EDENIED", at, err)
		}
	}
	r.clk.Add(15 * time.Minute) // 09:15
	window("09:15")
	r.clk.Add(time.Hour) // 10:15: the 09:00 window ended 15 minutes ago
	prune(0)
	window("10:15")
	if n := rateRows(t, r.db); n != 2 {
		t.Fatalf("%d rate rows, want the windows of 09:00 and 10:00", n)
	}
	r.clk.Add(time.Hour) // 11:15: the 09:00 window ended an hour ago
	prune(1)
	window("11:15")
	if n := rateRows(t, r.db); n != 2 {
		t.Fatalf("%d rate rows, want the windows of 10:00 and 11:00", n)
	}
}
