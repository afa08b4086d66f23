package mesh

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
	"github.com/custody-dev/custody/systems"
)

// Commands returns custody mesh and custody demo mesh.
func (p Plugin) Commands() []systems.Command {
	return []systems.Command{
		{Name: "mesh", Summary: "wildfire mesh pods: forward node, aggregator, simulation", Run: p.runMesh},
		{Name: "demo mesh", Summary: "wildfire mesh: ridge-fire on 12 nodes → aggregation → approved broadcast", Run: p.runDemo},
	}
}

// errNoSimulator is the failure of a simulation asked of a program built
// without the simulator.
var errNoSimulator = errors.New("this program cannot simulate the mesh")

// runDemo runs custody demo mesh on the simulator.
func (p Plugin) runDemo(ctx context.Context, env systems.Env, args []string) int {
	if p.Sim == nil {
		return env.Host.Fail(errNoSimulator)
	}
	return p.Sim.Demo(ctx, env, args)
}

// runMesh runs the wildfire mesh pods: a forward node, an aggregator, or
// a simulation.
func (p Plugin) runMesh(ctx context.Context, env systems.Env, args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(env.Stderr, "usage: custody mesh keygen|node|aggregator|simulate [flags]")
		return systems.ExitUsage
	}
	switch args[0] {
	case "keygen":
		return runKeygen(env, args[1:])
	case "node":
		return p.runNode(ctx, env, args[1:])
	case "aggregator":
		return p.runAggregator(ctx, env, args[1:])
	case "simulate":
		if p.Sim == nil {
			return env.Host.Fail(errNoSimulator)
		}
		return p.Sim.Simulate(ctx, env, args[1:])
	}
	fmt.Fprintf(env.Stderr, "custody mesh: unknown subcommand %q (want keygen, node, aggregator or simulate)\n", args[0])
	return systems.ExitUsage
}

// dial dials NATS for one mesh participant, without a durable consumer.
func (p Plugin) dial(ctx context.Context, url, prefix string) (Transport, error) {
	if p.NATS == nil {
		return nil, errors.New("this program cannot join the mesh over NATS")
	}
	return p.NATS(ctx, url, prefix, "")
}

// runNode runs one forward node on NATS, reading the synthetic sensors
// of a scenario at the node's place on the ridge.
func (p Plugin) runNode(ctx context.Context, env systems.Env, args []string) int {
	if p.Sim == nil {
		return env.Host.Fail(errNoSimulator)
	}
	scenarios, byDefault := p.Sim.Scenarios()
	fs := env.Flags("mesh node", "--id forward-NAME --nats URL [flags]")
	id := fs.String("id", "", "node `ID` (forward-...)")
	keyFile := fs.String("key", "", "the node's nkey seed `FILE` (custody mesh keygen)")
	url := fs.String("nats", env.Setting("CUSTODY_NATS", ""), "NATS server `URL` (env CUSTODY_NATS)")
	prefix := fs.String("subjects", "mesh", "subject `PREFIX` of the mesh")
	scenario := fs.String("scenario", byDefault, "synthetic sensor scenario: "+strings.Join(scenarios, ", "))
	period := fs.Duration("period", 30*time.Second, "polling `PERIOD`")
	cycles := fs.Int("cycles", 0, "stop after `N` cycles (0: run until interrupted)")
	data := env.DataFlag(fs)
	contracts := env.ContractsFlag(fs)
	if ok, code := env.Parse(fs, args); !ok {
		return code
	}
	if *id == "" || *url == "" || *keyFile == "" {
		return env.FlagUsage(fs, "--id, --key and --nats are required")
	}
	key, err := LoadIdentity(*id, RoleNode, *keyFile)
	if err != nil {
		return env.Host.Fail(err)
	}
	st, err := env.Host.Open(ctx, systems.Open{Data: *data, Contracts: *contracts})
	if err != nil {
		return env.Host.Fail(err)
	}
	defer st.Close()
	tr, err := p.dial(ctx, *url, *prefix)
	if err != nil {
		return env.Host.Fail(err)
	}
	defer tr.Close()
	pos, sensor, err := p.Sim.Sensor(*scenario, nodeIndex(*id), time.Now())
	if err != nil {
		return env.Host.Fail(err)
	}
	n, err := NewNode(NodeConfig{ID: *id, Position: pos, Subjects: Subjects{Prefix: *prefix},
		Wire: &Wire{Transport: tr, Validator: st.Registry, Ledger: st.Store, Actor: *id, Identity: key}, Sensor: sensor})
	if err != nil {
		return env.Host.Fail(err)
	}
	return nodeLoop(ctx, env, n, *period, *cycles)
}

// nodeLoop runs cycles and prints each advisory's tier.
func nodeLoop(ctx context.Context, env systems.Env, n *Node, period time.Duration, cycles int) int {
	t := time.NewTicker(period)
	defer t.Stop()
	for k := 0; cycles == 0 || k < cycles; k++ {
		adv, _, err := n.Cycle(ctx)
		if err != nil {
			fmt.Fprintf(env.Stderr, "%s: cycle failed: %s\n", n.ID(), custody.ErrorMessage(err))
		} else {
			fmt.Fprintf(env.Stdout, "%s %s %s: %s\n", adv.ObservationTS, adv.NodeID, adv.DetectorState.Tier, adv.AdvisoryText)
		}
		if cycles != 0 && k+1 == cycles {
			break
		}
		select {
		case <-ctx.Done():
			return systems.ExitOK
		case <-t.C:
		}
	}
	return systems.ExitOK
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

// runAggregator aggregates the advisories of every node on NATS.
func (p Plugin) runAggregator(ctx context.Context, env systems.Env, args []string) int {
	fs := env.Flags("mesh aggregator", "--nats URL --key FILE --roster FILE [flags]")
	url := fs.String("nats", env.Setting("CUSTODY_NATS", ""), "NATS server `URL` (env CUSTODY_NATS)")
	keyFile := fs.String("key", "", "the aggregator's nkey seed `FILE` (custody mesh keygen)")
	rosterFile := fs.String("roster", "", "roster `FILE` of the admitted nodes")
	prefix := fs.String("subjects", "mesh", "subject `PREFIX` of the mesh")
	period := fs.Duration("node-period", 30*time.Second, "the nodes' polling `PERIOD` (stale after three)")
	interval := fs.Duration("interval", time.Minute, "timer cadence `INTERVAL`")
	data := env.DataFlag(fs)
	contracts := env.ContractsFlag(fs)
	if ok, code := env.Parse(fs, args); !ok {
		return code
	}
	if *url == "" || *keyFile == "" || *rosterFile == "" {
		return env.FlagUsage(fs, "--nats, --key and --roster are required")
	}
	roster, err := LoadRoster(*rosterFile)
	if err != nil {
		return env.Host.Fail(err)
	}
	key, err := LoadIdentity("aggregator", RoleAggregator, *keyFile)
	if err != nil {
		return env.Host.Fail(err)
	}
	st, err := env.Host.Open(ctx, systems.Open{Data: *data, Contracts: *contracts})
	if err != nil {
		return env.Host.Fail(err)
	}
	defer st.Close()
	tr, err := p.dial(ctx, *url, *prefix)
	if err != nil {
		return env.Host.Fail(err)
	}
	defer tr.Close()
	agg := NewAggregator(AggregatorConfig{
		Wire:       &Wire{Transport: tr, Validator: st.Registry, Ledger: st.Store, Actor: "aggregator", Identity: key, Roster: roster},
		Subjects:   Subjects{Prefix: *prefix},
		NodePeriod: *period, Interval: *interval,
		OnAggregation: func(a Aggregation, _ []byte, trigger string) {
			fmt.Fprintf(env.Stdout, "%s %-9s %s nodes=%d stale=%d id=%s\n", a.AggregationTS, a.SeverityTier, trigger, len(a.InputNodeIDs), len(a.StaleNodeIDs), a.ApprovalRequestID)
		},
	})
	if _, err := agg.Listen(ctx); err != nil {
		return env.Host.Fail(err)
	}
	_ = agg.Run(ctx, time.Second)
	return systems.ExitOK
}

// runKeygen makes the key of one mesh participant: the seed goes to a
// new file readable by its owner only, to be installed on that
// participant, and the public key is added to the roster file (created
// when absent), which every receiver reads.
func runKeygen(env systems.Env, args []string) int {
	fs := env.Flags("mesh keygen", "--name NAME --role node|aggregator|desk --out FILE [--roster FILE]")
	name := fs.String("name", "", "the participant's `NAME`: a node's id (forward-...), or a label")
	role := fs.String("role", string(RoleNode), "`ROLE`: node, aggregator or desk")
	out := fs.String("out", "", "new seed `FILE` to write (mode 0600; never replaced)")
	rosterFile := fs.String("roster", "", "roster `FILE` to admit the public key to (created when absent)")
	if ok, code := env.Parse(fs, args); !ok {
		return code
	}
	if *name == "" || *out == "" {
		return env.FlagUsage(fs, "--name and --out are required")
	}
	id, err := NewIdentity(*name, Role(*role))
	if err != nil {
		return env.FlagUsage(fs, err.Error())
	}
	if err := id.WriteSeed(*out); err != nil {
		return env.Host.Fail(err)
	}
	if *rosterFile != "" {
		// A roster that refuses the member leaves no seed behind.
		if err := admitToRoster(*rosterFile, id.Member); err != nil {
			_ = os.Remove(*out)
			return env.Host.Fail(&custody.Error{Kind: custody.EINVALID, Message: err.Error(), Err: err})
		}
	}
	line, err := json.Marshal(id.Member)
	if err != nil {
		return env.Host.Fail(err)
	}
	fmt.Fprintf(env.Stdout, "%s\n", line)
	return systems.ExitOK
}

// admitToRoster adds member to the roster file at path, creating it.
func admitToRoster(path string, member Member) error {
	var f RosterFile
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("read mesh roster: %w", err)
	default:
		r, err := ReadRoster(raw)
		if err != nil {
			return fmt.Errorf("mesh roster %s: %w", path, err)
		}
		f.Members = r.Members()
	}
	f.Members = append(f.Members, member)
	if _, err := NewRoster(f.Members...); err != nil {
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
