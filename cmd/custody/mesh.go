package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/systems/mesh"
	"github.com/custody-dev/custody/systems/mesh/natsmesh"
)

// runMesh runs the wildfire mesh pods: a forward node, an aggregator, or
// a simulation.
func (m *Main) runMesh(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(m.Stderr, "usage: custody mesh keygen|node|aggregator|simulate [flags]")
		return exitUsage
	}
	switch args[0] {
	case "keygen":
		return m.runMeshKeygen(args[1:])
	case "node":
		return m.runMeshNode(ctx, args[1:])
	case "aggregator":
		return m.runMeshAggregator(ctx, args[1:])
	case "simulate":
		return m.runMeshSimulate(ctx, args[1:])
	}
	fmt.Fprintf(m.Stderr, "custody mesh: unknown subcommand %q (want keygen, node, aggregator or simulate)\n", args[0])
	return exitUsage
}

// meshNATS dials NATS for one mesh participant.
func meshNATS(ctx context.Context, url, prefix, durable string) (*natsmesh.Transport, error) {
	return natsmesh.Dial(ctx, natsmesh.Config{URL: url, Name: durable, Subjects: mesh.Subjects{Prefix: prefix}, Durable: durable})
}

// runMeshNode runs one forward node on NATS, reading the synthetic
// sensors of a scenario at the node's place on the ridge.
func (m *Main) runMeshNode(ctx context.Context, args []string) int {
	fs := m.flags("mesh node", "--id forward-NAME --nats URL [flags]")
	id := fs.String("id", "", "node `ID` (forward-...)")
	keyFile := fs.String("key", "", "the node's nkey seed `FILE` (custody mesh keygen)")
	url := fs.String("nats", m.env("CUSTODY_NATS", ""), "NATS server `URL` (env CUSTODY_NATS)")
	prefix := fs.String("subjects", "mesh", "subject `PREFIX` of the mesh")
	scenario := fs.String("scenario", mesh.ScenarioRidgeFire, "synthetic sensor scenario: "+strings.Join(mesh.Scenarios(), ", "))
	period := fs.Duration("period", 30*time.Second, "polling `PERIOD`")
	cycles := fs.Int("cycles", 0, "stop after `N` cycles (0: run until interrupted)")
	data := m.dataFlag(fs)
	contracts := m.contractsFlag(fs)
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if *id == "" || *url == "" || *keyFile == "" {
		return m.flagUsage(fs, "--id, --key and --nats are required")
	}
	key, err := mesh.LoadIdentity(*id, mesh.RoleNode, *keyFile)
	if err != nil {
		return m.fail(err)
	}
	st, err := m.openStack(ctx, *data, *contracts)
	if err != nil {
		return m.fail(err)
	}
	defer st.Close()
	tr, err := meshNATS(ctx, *url, *prefix, "")
	if err != nil {
		return m.fail(err)
	}
	defer tr.Close()
	world, err := mesh.NewWorld(*scenario, nodeIndex(*id)+1, time.Now())
	if err != nil {
		return m.fail(err)
	}
	i := nodeIndex(*id)
	n, err := mesh.NewNode(mesh.NodeConfig{ID: *id, Position: world.Position(i), Period: *period, Subjects: mesh.Subjects{Prefix: *prefix},
		Wire: &mesh.Wire{Transport: tr, Validator: st.reg, Ledger: st.db, Actor: *id, Identity: key},
		Sensor: mesh.SensorFunc(func(_ context.Context, now time.Time) (mesh.SensorReading, mesh.Conditions, error) {
			r, c := world.Read(i, now)
			return r, c, nil
		})})
	if err != nil {
		return m.fail(err)
	}
	return m.nodeLoop(ctx, n, *period, *cycles)
}

// nodeLoop runs cycles and prints each advisory's tier.
func (m *Main) nodeLoop(ctx context.Context, n *mesh.Node, period time.Duration, cycles int) int {
	t := time.NewTicker(period)
	defer t.Stop()
	for k := 0; cycles == 0 || k < cycles; k++ {
		adv, _, err := n.Cycle(ctx)
		if err != nil {
			fmt.Fprintf(m.Stderr, "%s: cycle failed: %s\n", n.ID(), custody.ErrorMessage(err))
		} else {
			fmt.Fprintf(m.Stdout, "%s %s %s: %s\n", adv.ObservationTS, adv.NodeID, adv.DetectorState.Tier, adv.AdvisoryText)
		}
		if cycles != 0 && k+1 == cycles {
			break
		}
		select {
		case <-ctx.Done():
			return exitOK
		case <-t.C:
		}
	}
	return exitOK
}

// nodeIndex places forward-ridge-N at index N-1 of the ridge; other ids
// take index 0.
func nodeIndex(id string) int {
	k := strings.LastIndexByte(id, '-')
	n, err := strconv.Atoi(id[k+1:])
	if err != nil || n < 1 || n > 100000 {
		return 0
	}
	return n - 1
}

// runMeshAggregator aggregates the advisories of every node on NATS.
func (m *Main) runMeshAggregator(ctx context.Context, args []string) int {
	fs := m.flags("mesh aggregator", "--nats URL --key FILE --roster FILE [flags]")
	url := fs.String("nats", m.env("CUSTODY_NATS", ""), "NATS server `URL` (env CUSTODY_NATS)")
	keyFile := fs.String("key", "", "the aggregator's nkey seed `FILE` (custody mesh keygen)")
	rosterFile := fs.String("roster", "", "roster `FILE` of the admitted nodes")
	prefix := fs.String("subjects", "mesh", "subject `PREFIX` of the mesh")
	period := fs.Duration("node-period", 30*time.Second, "the nodes' polling `PERIOD` (stale after three)")
	interval := fs.Duration("interval", time.Minute, "timer cadence `INTERVAL`")
	data := m.dataFlag(fs)
	contracts := m.contractsFlag(fs)
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if *url == "" || *keyFile == "" || *rosterFile == "" {
		return m.flagUsage(fs, "--nats, --key and --roster are required")
	}
	roster, err := mesh.LoadRoster(*rosterFile)
	if err != nil {
		return m.fail(err)
	}
	key, err := mesh.LoadIdentity("aggregator", mesh.RoleAggregator, *keyFile)
	if err != nil {
		return m.fail(err)
	}
	st, err := m.openStack(ctx, *data, *contracts)
	if err != nil {
		return m.fail(err)
	}
	defer st.Close()
	tr, err := meshNATS(ctx, *url, *prefix, "")
	if err != nil {
		return m.fail(err)
	}
	defer tr.Close()
	agg := mesh.NewAggregator(mesh.AggregatorConfig{
		Wire:       &mesh.Wire{Transport: tr, Validator: st.reg, Ledger: st.db, Actor: "aggregator", Identity: key, Roster: roster},
		Subjects:   mesh.Subjects{Prefix: *prefix},
		NodePeriod: *period, Interval: *interval,
		OnAggregation: func(a mesh.Aggregation, _ []byte, trigger string) {
			fmt.Fprintf(m.Stdout, "%s %-9s %s nodes=%d stale=%d id=%s\n", a.AggregationTS, a.SeverityTier, trigger, len(a.InputNodeIDs), len(a.StaleNodeIDs), a.ApprovalRequestID)
		},
	})
	if _, err := agg.Listen(ctx); err != nil {
		return m.fail(err)
	}
	_ = agg.Run(ctx, time.Second)
	return exitOK
}

// runMeshSimulate runs a scenario on a loopback and prints the tier
// timeline of every node and every aggregation.
func (m *Main) runMeshSimulate(ctx context.Context, args []string) int {
	fs := m.flags("mesh simulate", "[--nodes N] [--minutes M] [--speedup X] [--scenario NAME]")
	nodes := fs.Int("nodes", 12, "number of forward `N`odes")
	minutes := fs.Int("minutes", 20, "simulated `M`inutes")
	speedup := fs.Float64("speedup", 0, "simulated seconds per real second (0: as fast as possible)")
	scenario := fs.String("scenario", mesh.ScenarioRidgeFire, "scenario: "+strings.Join(mesh.Scenarios(), ", "))
	data := fs.String("data", "", "data `DIR` for the ledger (default: a temporary directory, removed afterwards)")
	contracts := m.contractsFlag(fs)
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if *nodes < 1 || *minutes < 1 || *speedup < 0 {
		return m.flagUsage(fs, "--nodes and --minutes must be positive, --speedup not negative")
	}
	dir, cleanup, err := meshDataDir(*data)
	if err != nil {
		return m.fail(err)
	}
	defer cleanup()
	st, err := m.sqliteOnly().openStack(ctx, dir, *contracts) // a scratch run, never a shared store
	if err != nil {
		return m.fail(err)
	}
	defer st.Close()
	sim, err := m.newMeshSim(st, *scenario, *nodes, time.Duration(*minutes)*time.Minute, *speedup, nil)
	if err != nil {
		return m.fail(err)
	}
	if err := sim.Run(ctx); err != nil {
		return m.fail(err)
	}
	m.progressDone()
	if err := sim.Timeline.WriteTimeline(m.Stdout); err != nil {
		return m.fail(err)
	}
	if _, err := sim.Timeline.Check(); err != nil {
		fmt.Fprintf(m.Stdout, "FAILED: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// newMeshSim builds a simulation on the stack, with an approval service
// on the simulated clock, paced by speedup, showing progress on a
// terminal, and calling operator after every cycle when set.
func (m *Main) newMeshSim(st *stack, scenario string, nodes int, d time.Duration, speedup float64, operator func(context.Context, *mesh.Sim) error) (*mesh.Sim, error) {
	var sim *mesh.Sim
	clock := func() time.Time { return sim.Now() }
	svc, err := approval.New(approval.Config{Store: st.db, Ledger: st.db, Now: clock})
	if err != nil {
		return nil, err
	}
	period := 30 * time.Second
	total := int(d / period)
	sim, err = mesh.NewSim(mesh.SimConfig{
		Scenario: scenario, Nodes: nodes, Duration: d, Period: period, Start: time.Now().UTC().Truncate(time.Minute),
		Transport: mesh.NewLoopback(mesh.Faults{}), Validator: st.reg, Ledger: st.db, Approvals: svc,
		Step: func(ctx context.Context, s *mesh.Sim) error {
			m.progress(len(s.Timeline.Times), total)
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

// isTerminal reports whether w is a character device.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progress shows how far a simulation is, when stderr is a terminal.
func (m *Main) progress(done, total int) {
	if !isTerminal(m.Stderr) || total == 0 {
		return
	}
	const width = 30
	k := min(width, done*width/total)
	fmt.Fprintf(m.Stderr, "\r  simulating [%s%s] %d/%d cycles", strings.Repeat("#", k), strings.Repeat(" ", width-k), done, total)
}

// progressDone ends the progress line.
func (m *Main) progressDone() {
	if isTerminal(m.Stderr) {
		fmt.Fprintln(m.Stderr)
	}
}

// meshDataDir returns the data directory and how to clean it up.
func meshDataDir(data string) (string, func(), error) {
	if data != "" {
		return data, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "custody-mesh-")
	if err != nil {
		return "", nil, fmt.Errorf("create mesh data directory: %w", err)
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// runMeshKeygen makes the key of one mesh participant: the seed goes to
// a new file readable by its owner only, to be installed on that
// participant, and the public key is added to the roster file (created
// when absent), which every receiver reads.
func (m *Main) runMeshKeygen(args []string) int {
	fs := m.flags("mesh keygen", "--name NAME --role node|aggregator|desk --out FILE [--roster FILE]")
	name := fs.String("name", "", "the participant's `NAME`: a node's id (forward-...), or a label")
	role := fs.String("role", string(mesh.RoleNode), "`ROLE`: node, aggregator or desk")
	out := fs.String("out", "", "new seed `FILE` to write (mode 0600; never replaced)")
	rosterFile := fs.String("roster", "", "roster `FILE` to admit the public key to (created when absent)")
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if *name == "" || *out == "" {
		return m.flagUsage(fs, "--name and --out are required")
	}
	id, err := mesh.NewIdentity(*name, mesh.Role(*role))
	if err != nil {
		return m.flagUsage(fs, err.Error())
	}
	if err := id.WriteSeed(*out); err != nil {
		return m.fail(err)
	}
	if *rosterFile != "" {
		// A roster that refuses the member leaves no seed behind.
		if err := admitToRoster(*rosterFile, id.Member); err != nil {
			_ = os.Remove(*out)
			return m.fail(&custody.Error{Kind: custody.EINVALID, Message: err.Error(), Err: err})
		}
	}
	line, err := json.Marshal(id.Member)
	if err != nil {
		return m.fail(err)
	}
	fmt.Fprintf(m.Stdout, "%s\n", line)
	return exitOK
}

// admitToRoster adds member to the roster file at path, creating it.
func admitToRoster(path string, member mesh.Member) error {
	var f mesh.RosterFile
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("read mesh roster: %w", err)
	default:
		r, err := mesh.ReadRoster(raw)
		if err != nil {
			return fmt.Errorf("mesh roster %s: %w", path, err)
		}
		f.Members = r.Members()
	}
	f.Members = append(f.Members, member)
	if _, err := mesh.NewRoster(f.Members...); err != nil {
		return fmt.Errorf("mesh roster %s: %w", path, err)
	}
	out, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encode mesh roster: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(out, '\n'), 0o644); err != nil {
		return fmt.Errorf("write mesh roster: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write mesh roster: %w", err)
	}
	return nil
}
