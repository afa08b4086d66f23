package sim

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/systems"
	"github.com/custody-dev/custody/systems/mesh"
)

// Simulate runs custody mesh simulate: a scenario on a loopback, printing
// the tier timeline of every node and every aggregation. It exits 1 when
// the timeline breaks an invariant (Timeline.Check).
func (Simulator) Simulate(ctx context.Context, env systems.Env, args []string) int {
	fs := env.Flags("mesh simulate", "[--nodes N] [--minutes M] [--speedup X] [--scenario NAME]")
	nodes := fs.Int("nodes", 12, "number of forward `N`odes")
	minutes := fs.Int("minutes", 20, "simulated `M`inutes")
	speedup := fs.Float64("speedup", 0, "simulated seconds per real second (0: as fast as possible)")
	scenario := fs.String("scenario", ScenarioRidgeFire, "scenario: "+strings.Join(Scenarios(), ", "))
	data := fs.String("data", "", "data `DIR` for the ledger (default: a temporary directory, removed afterwards)")
	contracts := env.ContractsFlag(fs)
	if ok, code := env.Parse(fs, args); !ok {
		return code
	}
	if *nodes < 1 || *minutes < 1 || *speedup < 0 {
		return env.FlagUsage(fs, "--nodes and --minutes must be positive, --speedup not negative")
	}
	dir, cleanup, err := dataDir(*data)
	if err != nil {
		return env.Host.Fail(err)
	}
	defer cleanup()
	st, err := env.Host.Open(ctx, systems.Open{Data: dir, Contracts: *contracts, Scratch: true}) // a scratch run, never a shared store
	if err != nil {
		return env.Host.Fail(err)
	}
	defer st.Close()
	sim, err := newSim(env.Stderr, st, *scenario, *nodes, time.Duration(*minutes)*time.Minute, *speedup, nil)
	if err != nil {
		return env.Host.Fail(err)
	}
	if err := sim.Run(ctx); err != nil {
		return env.Host.Fail(err)
	}
	progressDone(env.Stderr)
	if err := sim.Timeline.WriteTimeline(env.Stdout); err != nil {
		return env.Host.Fail(err)
	}
	if _, err := sim.Timeline.Check(); err != nil {
		fmt.Fprintf(env.Stdout, "FAILED: %v\n", err)
		return systems.ExitFailed
	}
	return systems.ExitOK
}

// newSim builds a simulation on the stack, with an approval service on
// the simulated clock, paced by speedup, showing progress when stderr is
// a terminal, and calling operator after every cycle when set.
func newSim(stderr io.Writer, st *systems.Stack, scenario string, nodes int, d time.Duration, speedup float64, operator func(context.Context, *Sim) error) (*Sim, error) {
	var sim *Sim
	clock := func() time.Time { return sim.Now() }
	svc, err := approval.New(approval.Config{Store: st.Store, Ledger: st.Store, Now: clock})
	if err != nil {
		return nil, err
	}
	period := 30 * time.Second
	total := int(d / period)
	sim, err = New(Config{
		Scenario: scenario, Nodes: nodes, Duration: d, Period: period, Start: time.Now().UTC().Truncate(time.Minute),
		Transport: mesh.NewLoopback(mesh.Faults{}), Validator: st.Registry, Ledger: st.Store, Approvals: svc,
		Step: func(ctx context.Context, s *Sim) error {
			progress(stderr, len(s.Timeline.Times), total)
			if operator != nil {
				if err := operator(ctx, s); err != nil {
					return err
				}
			}
			if speedup > 0 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(time.Duration(float64(period) / speedup)):
				}
			}
			return nil
		},
	})
	return sim, err
}

// progress shows how far a simulation is, when stderr is a terminal.
func progress(stderr io.Writer, done, total int) {
	if !systems.IsTerminal(stderr) || total == 0 {
		return
	}
	const width = 30
	k := min(width, done*width/total)
	fmt.Fprintf(stderr, "\r  simulating [%s%s] %d/%d cycles", strings.Repeat("#", k), strings.Repeat(" ", width-k), done, total)
}

// progressDone ends the progress line.
func progressDone(stderr io.Writer) {
	if systems.IsTerminal(stderr) {
		fmt.Fprintln(stderr)
	}
}

// dataDir returns the data directory and how to clean it up.
func dataDir(data string) (string, func(), error) {
	if data != "" {
		return data, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "custody-mesh-")
	if err != nil {
		return "", nil, fmt.Errorf("create mesh data directory: %w", err)
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}
