package main

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/custody-dev/custody/brain"
	"github.com/custody-dev/custody/llm"
	"github.com/custody-dev/custody/mesh"
	"github.com/custody-dev/custody/peas"
	"github.com/custody-dev/custody/peas/otelspan"
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
			wildfire = mesh.New(m.meshDeps(st, set.nats, logger))
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
// or the real mesh over NATS when a URL is given.
func (m *Main) meshDeps(st *stack, natsURL string, logger *slog.Logger) mesh.Deps {
	d := mesh.Deps{Validator: st.reg, Ledger: st.db, Approvals: st.approvals, Logger: logger, OperatorOf: operatorOf}
	if natsURL != "" {
		d.Dial = func(ctx context.Context) (mesh.Transport, error) {
			return meshNATS(ctx, natsURL, "", "custody-serve")
		}
	}
	return d
}

// operatorOf names the operator behind a console request to a seed
// system's page: web mounts those pages behind operator authentication.
func operatorOf(r *http.Request) string {
	if p, ok := web.PrincipalFrom(r.Context()); ok && p.Role == web.RoleOperator {
		return p.ID
	}
	return ""
}
