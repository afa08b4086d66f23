package sim

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/systems/mesh"
)

func TestSimulationScenarios(t *testing.T) {
	tests := []struct {
		scenario  string
		top       mesh.Tier
		wantStale bool
	}{
		{ScenarioQuiet, mesh.Info, false},
		{ScenarioRedFlagDay, mesh.Warning, false},
		{ScenarioRidgeFire, mesh.Emergency, true},
		{ScenarioNodeLoss, mesh.Critical, true},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			env := newEnv(t)
			sim, err := New(Config{Scenario: tt.scenario, Nodes: 12, Duration: 15 * time.Minute,
				Transport: env.loop, Validator: env.reg, Approvals: env.approvals})
			if err != nil {
				t.Fatal(err)
			}
			if err := sim.Run(context.Background()); err != nil {
				t.Fatalf("run: %v", err)
			}
			top := mesh.Info
			for _, a := range sim.Timeline.Aggregations {
				top = mesh.MaxTier(top, a.Aggregation.SeverityTier)
			}
			if top != tt.top {
				t.Errorf("highest severity %s, want %s", top, tt.top)
			}
			capped, err := sim.Timeline.Check()
			if err != nil {
				t.Fatal(err)
			}
			if (capped > 0) != tt.wantStale {
				t.Errorf("%d aggregations capped a stale node", capped)
			}
			var out bytes.Buffer
			if err := sim.Timeline.WriteTimeline(&out); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), "forward-ridge-12 |") {
				t.Fatalf("timeline:\n%s", out.String())
			}
			if testing.Verbose() {
				t.Logf("\n%s", out.String())
			}
		})
	}
}

// TestEveryAggregationNamesAnApproval checks that in a simulated loss of
// nodes (quiet, then a hot node) every aggregation's approval_request_id
// names a real approval with its request on the ledger, info and held
// ones included.
func TestEveryAggregationNamesAnApproval(t *testing.T) {
	env := newEnv(t)
	// The desk and the approval service share env's clock, which keeps
	// the simulation's time: the desk judges an advisory's age by it.
	sim, err := New(Config{Scenario: ScenarioNodeLoss, Nodes: 12, Duration: 15 * time.Minute, Period: 30 * time.Second,
		Start: env.clock.Now(), Transport: env.loop, Validator: env.reg, Ledger: env.db, Approvals: env.approvals, DeskNow: env.clock.Now,
		Step: func(context.Context, *Sim) error { env.clock.Add(30 * time.Second); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	statuses := map[custody.ApprovalStatus]int{}
	for _, a := range sim.Timeline.Aggregations {
		id := a.Aggregation.ApprovalRequestID
		ap, err := env.approvals.Get(context.Background(), id)
		if err != nil {
			t.Fatalf("%s aggregation %s names no approval: %v", a.Aggregation.SeverityTier, id, err)
		}
		statuses[ap.Status]++
		if es, _ := env.db.Entries(context.Background(), custody.Query{Kind: custody.KindApprovalRequest, Trace: "mesh-" + id}); len(es) != 1 {
			t.Fatalf("aggregation %s: %d approval requests on the ledger", id, len(es))
		}
	}
	t.Logf("approval statuses %v", statuses)
	if statuses[custody.ApprovalDeclined] == 0 || statuses[custody.ApprovalPending]+statuses[custody.ApprovalExpired] == 0 {
		t.Fatalf("approval statuses %v: want some put to the operator and some declined by the desk", statuses)
	}
	if !slices.ContainsFunc(sim.Timeline.Aggregations, func(a Aggregation) bool { return a.Aggregation.SeverityTier == mesh.Info }) {
		t.Fatal("no info aggregation in the run")
	}
}
