package gate_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/store/postgres"
	"github.com/custody-dev/custody/store/postgres/pgtest"
)

// pgGateway is one gateway instance over the PostgreSQL database at url,
// offering a READ tool with a calls budget of 2 and the default refusal
// budget.
func pgGateway(t *testing.T, url, keyFile string) *gate.Gateway {
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
	limited := spec("limited", custody.Read)
	limited.MaxCallsPerTrace = 2
	gw, err := gate.New(gate.Config{Registry: loadRegistry(t), Ledger: db, Approvals: svc, State: db, Logger: discard()},
		"pg-test", []gate.Tool{{Spec: limited, Handler: ok}})
	if err != nil {
		t.Fatal(err)
	}
	return gw
}

// TestBudgetsAcrossInstances: two gateways sharing one PostgreSQL store
// share each trace's calls and refusal budgets, since the counts are
// committed with the entries in the store.
func TestBudgetsAcrossInstances(t *testing.T) {
	url := pgtest.URL(t)
	key := filepath.Join(t.TempDir(), "signing.key")
	a, b := pgGateway(t, url, key), pgGateway(t, url, key)
	ctx := context.Background()
	call := func(gw *gate.Gateway, trace, args string) error {
		_, err := gw.Call(ctx, custody.Call{Trace: trace, Tool: "limited", Args: json.RawMessage(args), Actor: "agent-1"})
		return err
	}
	// Refusals at either instance count against one refusal budget.
	for i := range gate.DefaultMaxRefusalsPerTrace {
		gw := []*gate.Gateway{a, b}[i%2]
		if err := call(gw, "t-probe", `{"x":1}`); custody.ErrorKind(err) != custody.EINVALID {
			t.Fatalf("malformed call %d: %v", i, err)
		}
	}
	for _, gw := range []*gate.Gateway{a, b} {
		err := call(gw, "t-probe", `{}`)
		if custody.ErrorKind(err) != custody.EDENIED || !strings.Contains(custody.ErrorMessage(err), "maximum_refusals_per_trace") {
			t.Fatalf("call after the refusals: %v, want the refusal budget's denial", err)
		}
	}
	// A malformed call does not spend the calls budget; two calls that
	// ran, one at each instance, do.
	if err := call(a, "t-run", `{"x":1}`); custody.ErrorKind(err) != custody.EINVALID {
		t.Fatalf("malformed call: %v", err)
	}
	for _, gw := range []*gate.Gateway{a, b} {
		if err := call(gw, "t-run", `{}`); err != nil {
			t.Fatalf("call within the budget: %v", err)
		}
	}
	err := call(a, "t-run", `{}`)
	if custody.ErrorKind(err) != custody.EDENIED || !strings.Contains(custody.ErrorMessage(err), "maximum_calls_per_trace") {
		t.Fatalf("third call: %v, want the calls budget's denial", err)
	}
}
