package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/custody-dev/custody/systems"
	"github.com/custody-dev/custody/systems/assure"
	"github.com/custody-dev/custody/systems/brain"
	"github.com/custody-dev/custody/systems/mesh"
	"github.com/custody-dev/custody/systems/mesh/natsmesh"
	"github.com/custody-dev/custody/systems/mesh/sim"
	"github.com/custody-dev/custody/systems/peas"
	"github.com/custody-dev/custody/web"
)

// builtWith lists the systems this program is built with, in the order
// their contracts load and their pages are listed. A new system is one
// folder under systems/ and one line here.
func builtWith() systems.List {
	return systems.List{
		peas.Plugin{},
		mesh.Plugin{NATS: natsmesh.Join, Sim: sim.Simulator{}},
		brain.Plugin{},
		assure.Plugin{},
	}
}

// serveSystems returns the systems set asks for, served next to the
// core: their tools join the envelope, their pages the console. Their
// simulated feeds run beside the server only with --simulate; the mesh
// joins a real mesh over NATS when --nats is given.
func (m *Main) serveSystems(ctx context.Context, set serveSettings) (servedSystems, error) {
	settings := systems.Settings{
		Systems: set.systems, Simulate: set.simulate, LLM: set.llm, LLMEdge: set.llmEdge,
		NATS: set.nats, Mesh: set.mesh, Room: set.room, Getenv: m.Getenv, Stderr: m.Stderr,
		Logger: slog.New(slog.NewTextHandler(m.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	type named struct {
		name string
		systems.Served
	}
	var all []named
	closeAll := func(ctx context.Context) {
		for _, s := range all {
			if s.Close != nil {
				if err := s.Close(ctx); err != nil {
					fmt.Fprintf(m.Stderr, "custody: %s: close: %v\n", s.name, err)
				}
			}
		}
	}
	var sys servedSystems
	for _, s := range builtWith() {
		served, err := s.Serve(ctx, settings)
		if err != nil {
			closeAll(ctx)
			return servedSystems{}, fmt.Errorf("%s: %w", s.Name(), err)
		}
		all = append(all, named{s.Name(), served})
		if err := served.CheckApprovers(); err != nil {
			closeAll(ctx)
			return servedSystems{}, fmt.Errorf("%s: %w", s.Name(), err)
		}
		sys.Tools = append(sys.Tools, served.Tools...)
		if served.Run != nil {
			sys.Runners = append(sys.Runners, func(ctx context.Context, _ *stack) error { return served.Run(ctx) })
		}
	}
	sys.Apps = func(st *stack) ([]web.App, error) {
		core := coreOf(st)
		var apps []web.App
		for _, s := range all {
			if s.CheckApproval != nil {
				st.checks = append(st.checks, s.CheckApproval)
			}
			if s.Attach == nil {
				continue
			}
			h, err := s.Attach(ctx, core)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.name, err)
			}
			if h != nil {
				apps = append(apps, web.App{Name: s.name, Title: s.Title, Handler: h})
			}
		}
		return apps, nil
	}
	sys.Runners = append(sys.Runners, func(ctx context.Context, _ *stack) error {
		<-ctx.Done()
		done, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		closeAll(done)
		return nil
	})
	return sys, nil
}

// coreOf returns what the stack lends a system. Its ledger id is empty
// when the store names none.
func coreOf(st *stack) systems.Core {
	core := systems.Core{Store: st.db, Registry: st.reg, Approvals: st.approvals, Gateway: st.gw, OperatorOf: operatorOf}
	core.LedgerID, _ = ledgerIDOf(st)
	return core
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
