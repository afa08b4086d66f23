package mesh

import (
	"context"
	"fmt"
	"net/http"
	"regexp"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/config"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/systems"
)

// Plugin is the T5 wildfire mesh as a system built on custody: the
// desk's console page and map, the check of a broadcast order an
// operator is about to approve, and either a simulated ridge on a
// loopback (--simulate) or the real mesh joined over NATS (--nats).
type Plugin struct {
	// NATS dials the mesh's NATS transport (natsmesh.Join); without it
	// the mesh cannot be joined over NATS.
	NATS func(ctx context.Context, url, prefix, durable string) (Transport, error)
	// Sim is the simulated ridge (sim.Simulator); without it the mesh
	// cannot be simulated, in serve or on the command line.
	Sim Simulator
}

var _ systems.System = Plugin{}

// Name returns "mesh".
func (Plugin) Name() string { return "mesh" }

// Contracts returns none: the mesh's documents are the PEAS seed's.
func (Plugin) Contracts() []contract.Source { return nil }

// Serve returns the mesh's part when set asks for it: its page, its
// approval check and, simulated or over NATS, its desk at work.
func (p Plugin) Serve(_ context.Context, set systems.Settings) (systems.Served, error) {
	if !set.Asked("mesh") {
		return systems.Served{}, nil
	}
	var sys *System
	served := systems.Served{Title: "Wildfire mesh"}
	served.Attach = func(_ context.Context, core systems.Core) (http.Handler, error) {
		deps, err := p.Deps(core, set)
		if err != nil {
			return nil, err
		}
		sys = New(deps)
		return sys.Handler(), nil
	}
	served.CheckApproval = func(ctx context.Context, a custody.Approval) error {
		if sys == nil {
			return fmt.Errorf("mesh: not attached yet for tool %q: %w", a.Tool, approval.ErrNoContract)
		}
		return sys.CheckApproval(ctx, a)
	}
	if set.Simulate || set.NATS != "" {
		served.Run = func(ctx context.Context) error { return sys.Run(ctx) }
	}
	return served, nil
}

// Deps wires the mesh to the core: a simulated ridge on a loopback, or
// the real mesh over NATS when set names a URL, with the roster and the
// desk's key, under this deployment's subject prefix and consumer name.
func (p Plugin) Deps(core systems.Core, set systems.Settings) (Deps, error) {
	d := Deps{Validator: core.Registry, Ledger: core.Store, Approvals: core.Approvals, Logger: set.Logger, OperatorOf: core.OperatorOf}
	if set.NATS == "" {
		if set.Simulate && p.Sim == nil {
			return d, errNoSimulator
		}
		d.Sim = p.Sim
		return d, nil
	}
	if p.NATS == nil {
		return d, fmt.Errorf("this program cannot join the mesh over NATS")
	}
	names, err := Names(core.LedgerID, set.Mesh)
	if err != nil {
		return d, err
	}
	if set.Mesh.Roster == "" || set.Mesh.Key == "" {
		return d, fmt.Errorf("joining the mesh over NATS needs --mesh-roster and --mesh-key (see custody mesh keygen)")
	}
	if d.Roster, err = LoadRoster(set.Mesh.Roster); err != nil {
		return d, err
	}
	if d.Key, err = LoadIdentity("desk", RoleDesk, set.Mesh.Key); err != nil {
		return d, err
	}
	d.Subjects = Subjects{Prefix: names.Subjects}
	d.Dial = func(ctx context.Context) (Transport, error) {
		return p.NATS(ctx, set.NATS, names.Subjects, names.Consumer)
	}
	if set.Stderr != nil {
		fmt.Fprintf(set.Stderr, "mesh: joining over NATS as subjects %s.*, consumer %s, %d members on the roster\n", names.Subjects, names.Consumer, len(d.Roster.Members()))
	}
	return d, nil
}

// namePattern is what a subject prefix or consumer name may hold: one
// NATS token, usable in stream and consumer names.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Names returns the subject prefix and consumer name of a deployment:
// as configured, else derived from its ledger id, so that two
// deployments on one NATS server neither share a consumer (and split
// its messages) nor see each other's subjects.
func Names(ledgerID string, cfg config.Mesh) (config.Mesh, error) {
	out := cfg
	if out.Subjects == "" || out.Consumer == "" {
		if len(ledgerID) < 12 {
			return out, fmt.Errorf("the store names no ledger id: give --mesh-subjects and --mesh-consumer")
		}
		if out.Subjects == "" {
			out.Subjects = "mesh-" + ledgerID[:12]
		}
		if out.Consumer == "" {
			out.Consumer = "custody-desk-" + ledgerID[:12]
		}
	}
	for _, v := range []string{out.Subjects, out.Consumer} {
		if !namePattern.MatchString(v) {
			return out, fmt.Errorf("mesh subject prefix or consumer name %q: want 1-64 of A-Z a-z 0-9 _ -", v)
		}
	}
	return out, nil
}
