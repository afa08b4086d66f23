package sim

import (
	"context"
	"time"

	"github.com/custody-dev/custody/systems/mesh"
)

// Simulator lends the simulated ridge to the mesh's plugin:
// mesh.Plugin{Sim: sim.Simulator{}}.
type Simulator struct{}

var _ mesh.Simulator = Simulator{}

// Serve runs one simulation of deps' scenario (ridge-fire when empty) for
// 30 simulated minutes on a loopback, one cycle every deps.Period slowed
// down by deps.Speedup. The desk judges expiry and the ledger is stamped
// by the wall clock (deps.Now), so that a live ledger's times never run
// ahead of the entries around them.
func (Simulator) Serve(ctx context.Context, deps mesh.Deps, show func(view *mesh.Aggregator, desk *mesh.Desk, source string)) error {
	scenario := deps.Scenario
	if scenario == "" {
		scenario = ScenarioRidgeFire
	}
	pace := time.Duration(float64(deps.Period) / deps.Speedup)
	sim, err := New(Config{
		Scenario: scenario, Nodes: deps.Nodes, Duration: 30 * time.Minute, Period: deps.Period,
		Start: deps.Now().UTC().Truncate(time.Second), Transport: mesh.NewLoopback(mesh.Faults{}), Validator: deps.Validator,
		Ledger: deps.Ledger, Approvals: deps.Approvals, Subjects: deps.Subjects, DeskNow: deps.Now, LedgerNow: deps.Now,
		Step: func(ctx context.Context, _ *Sim) error {
			if !mesh.Sleep(ctx, pace) {
				return ctx.Err()
			}
			return nil
		},
	})
	if err != nil {
		return err
	}
	show(sim.Aggregator, sim.Desk, "simulation: "+scenario)
	return sim.Run(ctx)
}

// Scenarios returns the scenario names, and ridge-fire as the default.
func (Simulator) Scenarios() ([]string, string) { return Scenarios(), ScenarioRidgeFire }

// Sensor returns the fixture position of node i and its synthetic
// sensor, reading World on the ridge of scenario from start.
func (Simulator) Sensor(scenario string, i int, start time.Time) (mesh.Position, mesh.Sensor, error) {
	world, err := NewWorld(scenario, i+1, start)
	if err != nil {
		return mesh.Position{}, nil, err
	}
	return world.Position(i), mesh.SensorFunc(func(_ context.Context, now time.Time) (mesh.SensorReading, mesh.Conditions, error) {
		r, c := world.Read(i, now)
		return r, c, nil
	}), nil
}
