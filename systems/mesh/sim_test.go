package mesh

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestSimulationScenarios(t *testing.T) {
	tests := []struct {
		scenario  string
		top       Tier
		wantStale bool
	}{
		{ScenarioQuiet, Info, false},
		{ScenarioRedFlagDay, Warning, false},
		{ScenarioRidgeFire, Emergency, true},
		{ScenarioNodeLoss, Critical, true},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			env := newEnv(t)
			sim, err := NewSim(SimConfig{Scenario: tt.scenario, Nodes: 12, Duration: 15 * time.Minute,
				Transport: env.loop, Validator: env.reg, Approvals: env.approvals})
			if err != nil {
				t.Fatal(err)
			}
			if err := sim.Run(context.Background()); err != nil {
				t.Fatalf("run: %v", err)
			}
			top := Info
			for _, a := range sim.Timeline.Aggregations {
				top = maxTier(top, a.Aggregation.SeverityTier)
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
