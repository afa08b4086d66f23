package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/custody-dev/custody/config"
	"github.com/custody-dev/custody/systems/brain"
	"github.com/custody-dev/custody/systems/llm"
	"github.com/custody-dev/custody/systems/mesh"
	"github.com/custody-dev/custody/systems/peas"
	"github.com/custody-dev/custody/systems/peas/otelspan"
	"github.com/custody-dev/custody/web"
)

// serveSystems returns the seed systems set asks for, served next to the
// core: their tools join the envelope, their pages the console. Their
// simulated feeds run beside the server only with --simulate; the mesh
// joins a real mesh over NATS when --nats is given.
func (m *Main) serveSystems(ctx context.Context, set serveSettings) (systems, error) {
	if len(set.systems) == 0 && set.room == "" {
		return systems{}, nil
	}
	router, err := llm.NewRouter(set.llm, set.llmEdge)
	if err != nil {
		return systems{}, err
	}
	// Each pile-up hop is a span when an OTLP endpoint is configured
	// (OTEL_EXPORTER_OTLP_ENDPOINT); tracing is off otherwise.
	tracer, flush, err := otelspan.NewTracer(ctx, "", otelspan.WithGetenv(m.Getenv))
	if err != nil {
		return systems{}, err
	}
	logger := slog.New(slog.NewTextHandler(m.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	on := func(name string) bool { return slices.Contains(set.systems, name) }
	var sys systems
	var pileup *peas.System
	var wildfire *mesh.System
	var room *brain.Room
	if on("peas") {
		pileup = peas.New(peas.Deps{LLM: router, Logger: logger, OperatorOf: operatorOf, Tracer: tracer})
		sys.Tools = pileup.Tools()
	}
	sys.Apps = func(st *stack) ([]web.App, error) {
		var apps []web.App
		if pileup != nil {
			pileup.Attach(st.approvals, st.db, st.db, st.reg)
			apps = append(apps, web.App{Name: "peas", Title: "Pile-up alert", Handler: pileup.Handler()})
		}
		if on("mesh") {
			deps, err := m.meshDeps(st, set, logger)
			if err != nil {
				return nil, err
			}
			wildfire = mesh.New(deps)
			st.checks = append(st.checks, wildfire.CheckApproval)
			apps = append(apps, web.App{Name: "mesh", Title: "Wildfire mesh", Handler: wildfire.Handler()})
		}
		if set.room != "" {
			var err error
			if room, err = brain.OpenRoom(ctx, set.room, brain.RoomOptions{}); err != nil {
				return nil, err
			}
			apps = append(apps, web.App{Name: "brain", Title: "Brain room", Handler: brain.Handler(room, operatorOf)})
		}
		return apps, nil
	}
	if pileup != nil && set.simulate {
		sys.Runners = append(sys.Runners, func(ctx context.Context, st *stack) error { return pileup.Run(ctx, st.gw) })
	}
	if on("mesh") && (set.simulate || set.nats != "") {
		sys.Runners = append(sys.Runners, func(ctx context.Context, st *stack) error { return wildfire.Run(ctx) })
	}
	sys.Runners = append(sys.Runners, func(ctx context.Context, _ *stack) error {
		<-ctx.Done()
		done, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if room != nil {
			room.Close()
		}
		return flush(done)
	})
	return sys, nil
}

// meshDeps wires the mesh to the stack: a simulated ridge on a loopback,
// or the real mesh over NATS when a URL is given, with the roster and
// the desk's key, under this deployment's subject prefix and consumer
// name.
func (m *Main) meshDeps(st *stack, set serveSettings, logger *slog.Logger) (mesh.Deps, error) {
	d := mesh.Deps{Validator: st.reg, Ledger: st.db, Approvals: st.approvals, Logger: logger, OperatorOf: operatorOf}
	if set.nats == "" {
		return d, nil
	}
	names, err := meshNames(st, set.mesh)
	if err != nil {
		return d, err
	}
	if set.mesh.Roster == "" || set.mesh.Key == "" {
		return d, fmt.Errorf("joining the mesh over NATS needs --mesh-roster and --mesh-key (see custody mesh keygen)")
	}
	if d.Roster, err = mesh.LoadRoster(set.mesh.Roster); err != nil {
		return d, err
	}
	if d.Key, err = mesh.LoadIdentity("desk", mesh.RoleDesk, set.mesh.Key); err != nil {
		return d, err
	}
	d.Subjects = mesh.Subjects{Prefix: names.Subjects}
	d.Dial = func(ctx context.Context) (mesh.Transport, error) {
		return meshNATS(ctx, set.nats, names.Subjects, names.Consumer)
	}
	fmt.Fprintf(m.Stderr, "mesh: joining over NATS as subjects %s.*, consumer %s, %d members on the roster\n", names.Subjects, names.Consumer, len(d.Roster.Members()))
	return d, nil
}

// meshNamePattern is what a subject prefix or consumer name may hold: one
// NATS token, usable in stream and consumer names.
var meshNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// meshNames returns the subject prefix and consumer name of this
// deployment: as configured, else derived from the ledger id, so that two
// deployments on one NATS server neither share a consumer (and split its
// messages) nor see each other's subjects.
func meshNames(st *stack, cfg config.Mesh) (config.Mesh, error) {
	out := cfg
	if out.Subjects == "" || out.Consumer == "" {
		id, err := ledgerIDOf(st)
		if err != nil {
			return out, fmt.Errorf("%w: give --mesh-subjects and --mesh-consumer", err)
		}
		if out.Subjects == "" {
			out.Subjects = "mesh-" + id[:12]
		}
		if out.Consumer == "" {
			out.Consumer = "custody-desk-" + id[:12]
		}
	}
	for _, v := range []string{out.Subjects, out.Consumer} {
		if !meshNamePattern.MatchString(v) {
			return out, fmt.Errorf("mesh subject prefix or consumer name %q: want 1-64 of A-Z a-z 0-9 _ -", v)
		}
	}
	return out, nil
}

// ledgerIDOf returns the id of the stack's ledger: the store's own, or the
// one its data directory records.
func ledgerIDOf(st *stack) (string, error) {
	var id string
	switch db := st.db.(type) {
	case interface{ LedgerID() string }:
		id = db.LedgerID()
	case interface{ Dir() string }:
		raw, err := os.ReadFile(filepath.Join(db.Dir(), "ledger.id"))
		if err != nil {
			return "", fmt.Errorf("read the ledger id: %w", err)
		}
		id = strings.TrimSpace(string(raw))
	}
	if len(id) < 12 {
		return "", fmt.Errorf("the store names no ledger id")
	}
	return id, nil
}

// operatorOf names the operator behind a console request to a seed
// system's page: web mounts those pages behind operator authentication.
func operatorOf(r *http.Request) string {
	if p, ok := web.PrincipalFrom(r.Context()); ok && p.Role == web.RoleOperator {
		return p.ID
	}
	return ""
}
