// Package sim is the wildfire mesh's simulator: a synthetic ridge of
// forward nodes (World) in one of a few scenarios, and a simulation (Sim)
// that runs the mesh's own nodes, aggregator and desk on a simulated
// clock over a loopback. Simulator lends it to the mesh's plugin, which
// runs it for serve --simulate, custody mesh simulate, custody demo mesh
// and the synthetic sensors of custody mesh node.
package sim

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/systems/mesh"
)

// Scenarios the simulator knows.
const (
	ScenarioQuiet      = "quiet"
	ScenarioRedFlagDay = "red-flag-day"
	ScenarioRidgeFire  = "ridge-fire"
	ScenarioNodeLoss   = "node-loss"
)

// Scenarios lists the scenario names.
func Scenarios() []string {
	return []string{ScenarioQuiet, ScenarioRedFlagDay, ScenarioRidgeFire, ScenarioNodeLoss}
}

// nodeSpacingKM is the distance between neighbouring nodes on the ridge.
const nodeSpacingKM = 1.5

// World is a synthetic landscape: nodes strung along a ridge, weather
// that follows the scenario, and (in ridge-fire) a fire that starts at the
// first node and spreads along the ridge.
type World struct {
	Scenario string
	Start    time.Time
	Nodes    int
}

// NewWorld returns the world of a scenario; EINVALID for an unknown one.
func NewWorld(scenario string, nodes int, start time.Time) (*World, error) {
	if !slices.Contains(Scenarios(), scenario) {
		return nil, custody.Errorf(custody.EINVALID, "unknown scenario %q: want one of %v", scenario, Scenarios())
	}
	if nodes < 1 {
		return nil, custody.Errorf(custody.EINVALID, "a mesh needs at least one node")
	}
	return &World{Scenario: scenario, Start: start, Nodes: nodes}, nil
}

// NodeID returns the id of node i.
func (w *World) NodeID(i int) string { return fmt.Sprintf("forward-ridge-%d", i+1) }

// Position returns the fixture position of node i: nodes go 24 to a
// 100 km MGRS square, in a line of squares.
func (w *World) Position(i int) mesh.Position {
	sq := i / 24
	col, row := "ABCDEFGHJKLMNPQRSTUVWXYZ"[sq%24], "ABCDEFGHJKLMNPQRSTUV"[(sq/24)%20]
	e, n := 10000+(i%24)*1500, 50000+(i%3)*700
	lat := 34.20 + float64(i%24)*0.0135 + float64(sq/24)*0.9
	lon := -118.40 + float64(i%24)*0.003 + float64(sq%24)*1.1
	return mesh.Position{MGRS: fmt.Sprintf("11S%c%c%05d%05d", col, row, e, n), Lat: mesh.Float(round(lat, 4)), Lon: mesh.Float(round(lon, 4))}
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// Alive reports whether node i still reports at t: in ridge-fire the fire
// burns a node's mast five minutes after reaching it; in node-loss two
// nodes lose power at minute 6.
func (w *World) Alive(i int, t time.Time) bool {
	m := t.Sub(w.Start).Minutes()
	switch w.Scenario {
	case ScenarioRidgeFire:
		return i != 0 || m < w.fireArrival(0)+5
	case ScenarioNodeLoss:
		return !(i == 2 || i == 5) || m < 6
	}
	return true
}

// fireArrival is the minute the fire reaches node i in ridge-fire: it
// ignites at node 0 at minute 3 and advances one node every 2 minutes
// up to node 4, where it holds.
func (w *World) fireArrival(i int) float64 {
	if i > 4 {
		return math.Inf(1)
	}
	return 3 + 2*float64(i)
}

// Read returns node i's reading and conditions at t.
func (w *World) Read(i int, t time.Time) (mesh.SensorReading, mesh.Conditions) {
	m := t.Sub(w.Start).Minutes()
	jit := float64((i*7)%5) / 10
	r := mesh.SensorReading{
		ThermalMaxC: mesh.Float(round(26+jit*10, 1)), ThermalAreaM2: mesh.Float(0), ThermalAnomalyPixels: new(int),
		AmbientC: mesh.Float(round(24+jit, 1)), HumidityPct: mesh.Float(round(38-jit*4, 1)),
		WindSpeedMS: mesh.Float(round(3.5+jit, 1)), WindGustMS: mesh.Float(round(5.5+jit, 1)), WindDirDeg: mesh.Float(250),
	}
	var c mesh.Conditions
	switch w.Scenario {
	case ScenarioRedFlagDay:
		w.redFlag(&r, &c, m, i)
	case ScenarioRidgeFire:
		w.ridgeFire(&r, &c, m, i)
	case ScenarioNodeLoss:
		if i == 2 && m >= 2 {
			r.ThermalMaxC, r.ThermalAreaM2 = mesh.Float(310), mesh.Float(12)
		}
	}
	return r, c
}

func (w *World) redFlag(r *mesh.SensorReading, c *mesh.Conditions, m float64, i int) {
	if m >= 4 {
		r.HumidityPct, r.WindSpeedMS, r.WindGustMS = mesh.Float(12), mesh.Float(11.8), mesh.Float(16.4)
	}
	if m >= 8 {
		c.RFWActive = mesh.Bool(true)
	}
	if i%5 == 4 {
		r.WindSpeedMS, r.WindGustMS = nil, nil // a broken anemometer
	}
}

func (w *World) ridgeFire(r *mesh.SensorReading, c *mesh.Conditions, m float64, i int) {
	r.HumidityPct, r.WindSpeedMS, r.WindGustMS = mesh.Float(13), mesh.Float(11.6), mesh.Float(15.9)
	if i == 7 {
		r.HumidityPct = nil // a failed hygrometer
	}
	front := -1
	for j := 0; j < w.Nodes; j++ {
		if m >= w.fireArrival(j) {
			front = j
		}
	}
	switch {
	case m >= w.fireArrival(i):
		r.ThermalMaxC, r.ThermalAreaM2 = mesh.Float(380+float64(i)*10), mesh.Float(25)
	case front >= 0 && i == front+1:
		r.ThermalMaxC, r.ThermalAreaM2 = mesh.Float(190), mesh.Float(3)
	}
	if front >= 0 && m >= 5 {
		d := math.Max(0, float64(i-front)) * nodeSpacingKM
		c.WFIGSProximityKM = mesh.Float(round(d, 1))
	}
}

// Config configures a simulation.
type Config struct {
	Scenario string
	Nodes    int
	Duration time.Duration
	// Period is the nodes' polling period; 30 s by default.
	Period time.Duration
	// Start is the simulated start time.
	Start time.Time
	// Wire carries the messages; its Now is replaced by the simulation's
	// clock. Nodes, aggregator and desk share it.
	Transport mesh.Transport
	Validator mesh.Validator
	Ledger    mesh.Recorder
	Approvals mesh.Approvals
	Subjects  mesh.Subjects
	// DeskNow is the desk's clock, which judges approval expiry; it is
	// the approval service's clock, and the simulation's when nil.
	DeskNow func() time.Time
	// LedgerNow stamps the evidence the simulation records; the
	// simulation's clock when nil. A simulation that shares a live ledger
	// stamps it with the wall clock, so that the ledger's times never run
	// ahead of the entries around them.
	LedgerNow func() time.Time
	// Step, when set, is called after every cycle (to pace a live run or
	// to play the operator).
	Step func(ctx context.Context, s *Sim) error
}

// Sim runs forward nodes, an aggregator and a desk on one simulated clock.
type Sim struct {
	cfg        Config
	World      *World
	Nodes      []*mesh.Node
	Aggregator *mesh.Aggregator
	Desk       *mesh.Desk
	// now is the simulated clock in Unix nanoseconds: the desk reads it
	// from its own goroutines while Run advances it.
	now      atomic.Int64
	Timeline Timeline
	// Roster admits the simulation's participants; an audience listening
	// to the simulation verifies with it.
	Roster *mesh.Roster
}

// Timeline is what a simulation saw: each node's tier at each cycle, and
// every aggregation.
type Timeline struct {
	Times        []time.Time
	Tiers        map[string][]string // node → tier per cycle ("" silent)
	Aggregations []Aggregation
	Broadcasts   []mesh.Broadcast
}

// Aggregation is one aggregation with what triggered it.
type Aggregation struct {
	At          time.Time
	Trigger     string
	Aggregation mesh.Aggregation
	// Inputs maps each input node to the tier it last reported.
	Inputs map[string]mesh.Tier
}

// New builds a simulation.
func New(cfg Config) (*Sim, error) {
	if cfg.Period <= 0 {
		cfg.Period = 30 * time.Second
	}
	if cfg.Start.IsZero() {
		cfg.Start = time.Date(2026, 7, 14, 13, 0, 0, 0, time.UTC)
	}
	w, err := NewWorld(cfg.Scenario, cfg.Nodes, cfg.Start)
	if err != nil {
		return nil, err
	}
	s := &Sim{cfg: cfg, World: w, Timeline: Timeline{Tiers: map[string][]string{}}}
	s.now.Store(cfg.Start.UnixNano())
	stamp := cfg.LedgerNow
	if stamp == nil {
		stamp = s.Now
	}
	keys, err := newSimKeys(w)
	if err != nil {
		return nil, err
	}
	s.Roster = keys.roster
	wire := func(actor string) *mesh.Wire {
		return &mesh.Wire{Transport: cfg.Transport, Validator: cfg.Validator, Ledger: cfg.Ledger, Actor: actor, Now: stamp,
			Identity: keys.ids[actor], Roster: keys.roster}
	}
	for i := range cfg.Nodes {
		n, err := mesh.NewNode(mesh.NodeConfig{ID: w.NodeID(i), Position: w.Position(i), Now: s.Now, Subjects: cfg.Subjects,
			Wire: wire(w.NodeID(i)), Sensor: s.sensor(i)})
		if err != nil {
			return nil, err
		}
		s.Nodes = append(s.Nodes, n)
	}
	s.Aggregator = mesh.NewAggregator(mesh.AggregatorConfig{Wire: wire("aggregator"), Subjects: cfg.Subjects, Now: s.Now,
		NodePeriod: cfg.Period, OnAggregation: s.observe})
	if cfg.Approvals != nil {
		deskNow := cfg.DeskNow
		if deskNow == nil {
			deskNow = s.Now
		}
		s.Desk = mesh.NewDesk(mesh.DeskConfig{Wire: wire("desk"), Subjects: cfg.Subjects, Approvals: cfg.Approvals, Now: deskNow, NodePeriod: cfg.Period,
			OnBroadcast: func(b mesh.Broadcast) { s.Timeline.Broadcasts = append(s.Timeline.Broadcasts, b) }})
	}
	return s, nil
}

// simKeys are the keys of a simulation's participants, made afresh for
// each run, and the roster that admits them.
type simKeys struct {
	ids    map[string]*mesh.Identity
	roster *mesh.Roster
}

func newSimKeys(w *World) (simKeys, error) {
	k := simKeys{ids: map[string]*mesh.Identity{}}
	add := func(name string, role mesh.Role) error {
		id, err := mesh.NewIdentity(name, role)
		if err != nil {
			return err
		}
		k.ids[name] = id
		return nil
	}
	for i := range w.Nodes {
		if err := add(w.NodeID(i), mesh.RoleNode); err != nil {
			return k, err
		}
	}
	if err := add("aggregator", mesh.RoleAggregator); err != nil {
		return k, err
	}
	if err := add("desk", mesh.RoleDesk); err != nil {
		return k, err
	}
	var members []mesh.Member
	for _, id := range k.ids {
		members = append(members, id.Member)
	}
	r, err := mesh.NewRoster(members...)
	k.roster = r
	return k, err
}

// Now is the simulation's clock.
func (s *Sim) Now() time.Time { return time.Unix(0, s.now.Load()).UTC() }

func (s *Sim) sensor(i int) mesh.Sensor {
	return mesh.SensorFunc(func(_ context.Context, t time.Time) (mesh.SensorReading, mesh.Conditions, error) {
		r, c := s.World.Read(i, t)
		return r, c, nil
	})
}

func (s *Sim) observe(agg mesh.Aggregation, _ []byte, trigger string) {
	inputs := make(map[string]mesh.Tier, len(agg.InputNodeIDs))
	for _, st := range s.Aggregator.Nodes() {
		if slices.Contains(agg.InputNodeIDs, st.Advisory.NodeID) {
			inputs[st.Advisory.NodeID] = st.Advisory.DetectorState.Tier
		}
	}
	s.Timeline.Aggregations = append(s.Timeline.Aggregations, Aggregation{At: s.Now(), Trigger: trigger, Aggregation: agg, Inputs: inputs})
}

// Listen subscribes the desk and the aggregator to the transport. The
// desk subscribes first: on a loopback it then sees each advisory before
// the aggregation it triggers.
func (s *Sim) Listen(ctx context.Context) error {
	if s.Desk != nil {
		if _, err := s.Desk.Listen(ctx); err != nil {
			return err
		}
	}
	if _, err := s.Aggregator.Listen(ctx); err != nil {
		return err
	}
	return nil
}

// Run runs every cycle of the simulation: each live node reports, the
// aggregator ticks, the desk sweeps, and Step is called.
func (s *Sim) Run(ctx context.Context) error {
	if err := s.Listen(ctx); err != nil {
		return err
	}
	for s.Now().Sub(s.cfg.Start) < s.cfg.Duration {
		if err := s.Cycle(ctx); err != nil {
			return err
		}
		if s.cfg.Step != nil {
			if err := s.cfg.Step(ctx, s); err != nil {
				return err
			}
		}
		s.now.Add(int64(s.cfg.Period))
	}
	return nil
}

// Cycle runs one polling cycle at the current simulated time.
func (s *Sim) Cycle(ctx context.Context) error {
	now := s.Now()
	s.Timeline.Times = append(s.Timeline.Times, now)
	for i, n := range s.Nodes {
		tier := ""
		if s.World.Alive(i, now) {
			adv, _, err := n.Cycle(ctx)
			if err != nil {
				return fmt.Errorf("node %s: %w", n.ID(), err)
			}
			tier = string(adv.DetectorState.Tier)
		}
		s.Timeline.Tiers[n.ID()] = append(s.Timeline.Tiers[n.ID()], tier)
	}
	if _, err := s.Aggregator.Tick(ctx); err != nil {
		return err
	}
	if s.Desk != nil {
		if _, err := s.Desk.Sweep(ctx); err != nil {
			return err
		}
	}
	return nil
}
