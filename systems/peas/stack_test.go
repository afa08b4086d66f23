package peas_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/store/sqlite"
	"github.com/custody-dev/custody/systems/llm"
	"github.com/custody-dev/custody/systems/peas"

	"github.com/custody-dev/custody/internal/testclock"
)

// stack is the real system on a temp data directory: SQLite store,
// contract registry, approval service and gateway.
type stack struct {
	db        *sqlite.DB
	reg       *contract.Registry
	approvals *approval.Service
	gw        *gate.Gateway
	sys       *peas.System
	clock     *testclock.Clock
}

func newStack(t *testing.T, router llm.Router, opts ...func(*peas.Deps)) *stack {
	t.Helper()
	clk := testclock.New(time.Date(2026, 1, 9, 14, 0, 0, 0, time.UTC))
	db, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	reg, err := contract.Load(contract.Options{Contracts: []contract.Source{peas.Contract()}})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := approval.New(approval.Config{Store: db, Ledger: db, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	deps := peas.Deps{Approvals: svc, State: db, Ledger: db, Schemas: reg, LLM: router, Now: clk.Now}
	for _, o := range opts {
		o(&deps)
	}
	sys := peas.New(deps)
	gw, err := gate.New(gate.Config{Registry: reg, Ledger: db, Approvals: svc, State: db, Now: clk.Now},
		"peas", sys.Tools())
	if err != nil {
		t.Fatal(err)
	}
	return &stack{db: db, reg: reg, approvals: svc, gw: gw, sys: sys, clock: clk}
}

// Readings of the whiteout's worst window and of a calm day.
const (
	whiteout = `{"crash_density_per_min":1.4,"visibility_ft":150,"ambient_temp_f":24,"precipitation_type":"snow","traffic_speed_mph":55,"wind_mph":38}`
	calm     = `{"crash_density_per_min":0,"visibility_ft":10560,"ambient_temp_f":58,"precipitation_type":"none","traffic_speed_mph":68}`
	location = "I-94:MM88-EB"
	sign     = "I-94:VMS:MM85-EB"
)

// pending runs the chain on the whiteout window up to the approval.
func (s *stack) pending(t *testing.T) *peas.Chain {
	t.Helper()
	ch, err := s.sys.Start(context.Background(), s.gw, location, json.RawMessage(whiteout))
	if err != nil {
		t.Fatal(err)
	}
	if ch.Stage != peas.StagePending || ch.ApprovalID == "" {
		t.Fatalf("chain stage %q (final %q), want pending with an approval", ch.Stage, ch.Final)
	}
	return ch
}

func (s *stack) decide(t *testing.T, id, decision string, args json.RawMessage) custody.Approval {
	t.Helper()
	a, err := s.approvals.Decide(context.Background(), id, approval.Decision{Decision: decision, Operator: "op-1", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// call calls a tool through the gateway in trace, as the chain's agent
// does: an approval the agent asked for authorises only the agent.
func (s *stack) call(trace, tool, args string) (custody.Result, error) {
	return s.gw.Call(context.Background(), custody.Call{Trace: trace, Tool: tool, Args: json.RawMessage(args), Actor: "peas-agent", Via: "test"})
}

// refusedOnLedger asserts that err is a refusal of kind and that its
// receipt names a ledger entry recording it.
func (s *stack) refusedOnLedger(t *testing.T, err error, kind string) {
	t.Helper()
	e := custody.AsError(err)
	if err == nil || e.Kind != kind {
		t.Fatalf("error = %v, want kind %s", err, kind)
	}
	if e.Receipt == nil {
		t.Fatalf("refusal %v has no receipt", err)
	}
	es, qerr := s.db.Entries(context.Background(), custody.Query{After: e.Receipt.Seq - 1, Limit: 1})
	if qerr != nil || len(es) != 1 {
		t.Fatalf("ledger entry %d: %v", e.Receipt.Seq, qerr)
	}
	if k := es[0].Kind; k != custody.KindCallRefused && k != custody.KindCallFailed {
		t.Fatalf("ledger entry %d kind %q, want a refusal", e.Receipt.Seq, k)
	}
}

func (s *stack) signShows(t *testing.T, want string) {
	t.Helper()
	signs, err := s.sys.Signs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, sg := range signs {
		if sg.BillboardID == sign {
			if sg.Message != want {
				t.Fatalf("sign %s shows %q (state %s), want %q", sign, sg.Message, sg.State, want)
			}
			return
		}
	}
	t.Fatalf("sign %s not in the registry", sign)
}
