package mesh

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/systems"
)

// Simulator is the mesh's simulated ridge, which this package does not
// hold (package mesh/sim implements it): the plugin is given one, and runs
// it for serve --simulate, custody mesh simulate, custody demo mesh and
// the synthetic sensors of custody mesh node.
type Simulator interface {
	// Serve runs one simulation of deps' scenario, nodes and period on a
	// loopback, paced by deps.Speedup, with deps' validator, ledger,
	// approvals, subjects and clock. It calls show with the simulation's
	// aggregator, desk and a line naming it once they are built, and
	// returns when the simulation ends or ctx does.
	Serve(ctx context.Context, deps Deps, show func(view *Aggregator, desk *Desk, source string)) error
	// Simulate runs custody mesh simulate args and returns its exit code.
	Simulate(ctx context.Context, env systems.Env, args []string) int
	// Demo runs custody demo mesh args and returns its exit code.
	Demo(ctx context.Context, env systems.Env, args []string) int
	// Scenarios returns the names of the scenarios and the one a
	// simulation runs when none is named.
	Scenarios() (names []string, byDefault string)
	// Sensor returns the position and the synthetic sensor of node i on
	// the ridge of scenario, whose clock starts at start; an error of kind
	// EINVALID for an unknown scenario.
	Sensor(scenario string, i int, start time.Time) (Position, Sensor, error)
}

// Deps are what a System needs from the core.
type Deps struct {
	Validator Validator
	Ledger    Recorder
	Approvals Approvals
	// Dial opens the NATS transport when the mesh is joined over NATS;
	// nil runs a simulated mesh on a loopback.
	Dial     func(ctx context.Context) (Transport, error)
	Subjects Subjects
	// Roster admits the nodes and aggregators of the mesh joined over
	// NATS, and Key is the desk's own identity, which signs broadcasts.
	// A simulation makes its own keys.
	Roster *Roster
	Key    *Identity
	// Sim runs the simulated mesh on a loopback when Dial is nil.
	Sim Simulator
	// Simulation settings (loopback only): scenario (the simulator's
	// default when empty), nodes, speedup.
	Scenario string
	Nodes    int
	Speedup  float64
	// Period is the nodes' polling period: a simulation's cycle, and the
	// period by which the desk judges a node stale (silent more than
	// three periods). Default 30 s.
	Period time.Duration
	// Now is the wall clock; time.Now when nil.
	Now    func() time.Time
	Logger *slog.Logger
	// OperatorOf names the authenticated operator of a console request;
	// when it names one, that id is recorded, not the one in the form.
	OperatorOf func(*http.Request) string
}

// System is the mesh as custody serve runs it: a desk for the console's
// approvals, a view of every node for the live map, and either a
// simulated mesh on a loopback or the real one joined over NATS.
type System struct {
	deps Deps
	mu   sync.Mutex
	view *Aggregator
	desk *Desk
	// source says where the nodes come from: "simulation ..." or "nats".
	source string
}

// New returns a System; Run starts it.
func New(deps Deps) *System {
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Nodes <= 0 {
		deps.Nodes = 12
	}
	if deps.Speedup <= 0 {
		deps.Speedup = 10
	}
	if deps.Period <= 0 {
		deps.Period = 30 * time.Second
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	return &System{deps: deps}
}

// Run runs the mesh until ctx ends: over NATS when Deps.Dial is set,
// else a simulation of Deps.Sim on a loopback that starts again when it
// ends. Without either it returns an error of kind EINVALID.
func (s *System) Run(ctx context.Context) error {
	if s.deps.Dial != nil {
		return s.runNATS(ctx)
	}
	if s.deps.Sim == nil {
		return custody.Errorf(custody.EINVALID, "a mesh not joined over NATS needs a simulator to run")
	}
	for ctx.Err() == nil {
		if err := s.runSim(ctx); err != nil && ctx.Err() == nil {
			s.deps.Logger.Warn("mesh simulation stopped", "err", err)
			if !Sleep(ctx, 5*time.Second) {
				break
			}
		}
	}
	return nil
}

func (s *System) runNATS(ctx context.Context) error {
	tr, err := s.deps.Dial(ctx)
	if err != nil {
		return err
	}
	defer tr.Close()
	if s.deps.Roster == nil || s.deps.Key == nil {
		return custody.Errorf(custody.EINVALID, "joining the mesh over NATS needs a roster and the desk's key (see custody mesh keygen)")
	}
	wire := &Wire{Transport: tr, Validator: s.deps.Validator, Ledger: s.deps.Ledger, Actor: "desk", Now: s.deps.Now,
		Identity: s.deps.Key, Roster: s.deps.Roster}
	desk := NewDesk(DeskConfig{Wire: wire, Subjects: s.deps.Subjects, Approvals: s.deps.Approvals, Now: s.deps.Now, NodePeriod: s.deps.Period})
	if _, err := desk.Listen(ctx); err != nil {
		return err
	}
	// The map shows the desk's own book: the advisories it admitted.
	s.set(desk.Book(), desk, "nats")
	return desk.Run(ctx, 2*time.Second)
}

// runSim runs one simulation, which the map and the desk then show.
func (s *System) runSim(ctx context.Context) error {
	return s.deps.Sim.Serve(ctx, s.deps, s.set)
}

// CheckApproval checks a broadcast order an operator is about to approve
// against the current desk (Desk.CheckApproval).
func (s *System) CheckApproval(ctx context.Context, a custody.Approval) error {
	_, desk, _ := s.current()
	if desk == nil {
		return fmt.Errorf("mesh: no desk yet for tool %q: %w", a.Tool, approval.ErrNoContract)
	}
	return desk.CheckApproval(ctx, a)
}

func (s *System) set(view *Aggregator, desk *Desk, source string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.view, s.desk, s.source = view, desk, source
}

func (s *System) current() (*Aggregator, *Desk, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.view, s.desk, s.source
}

// Sleep waits d or until ctx ends; it reports whether d passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
