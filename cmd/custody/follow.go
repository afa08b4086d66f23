package main

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/example"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/mcpserver"
	"github.com/custody-dev/custody/upstream"
	"github.com/custody-dev/custody/web"
)

// A server that cannot be reached at start is kept down (upstream.Dial);
// when it lists its tools for the first time the upstreams' offers
// change (upstream.Set.Revision). The gateway, its registry and the
// relay are built from the offers, so they are built again
// (regenerate), and serve's doors with them (followUpstreams): a tool
// nobody saw before is pinned on the ledger as it first appears, as at
// start, and served from then on.

// generation is what a stack with upstreams is built from again.
type generation struct {
	// mu guards the stack's gw, reg and relay, which regenerate replaces.
	mu sync.Mutex
	// base are the tools besides the upstreams' (the command's).
	base []gate.Tool
	// gcfg configures the gateway; its Registry is replaced.
	gcfg      gate.Config
	contracts string
	pins      *upstream.Pins
	// regRev is the revision of the offers whose contracts reg holds;
	// built the one of the gateway.
	regRev, built uint64
	// relayCheck says the relay's approval check is installed.
	relayCheck bool
	metrics    *web.Metrics
}

// regenerate builds the registry, the gateway and the relay from the
// upstreams' offers as they are now, again while a server listed for the
// first time meanwhile.
func (s *stack) regenerate(ctx context.Context) error {
	for {
		rev := s.up.Revision()
		err := s.generate(ctx, rev)
		if err == nil || s.up.Revision() == rev {
			return err
		}
	}
}

// generate builds the stack's gateway and relay for revision rev of the
// upstreams' offers, and its registry unless it holds rev's contracts.
func (s *stack) generate(ctx context.Context, rev uint64) error {
	g := s.gen
	g.mu.Lock()
	reg, regRev := s.reg, g.regRev
	g.mu.Unlock()
	if reg == nil || regRev != rev {
		extra := map[string][]byte{}
		name, raw := example.Contract()
		extra[name] = raw
		cs, err := s.up.Contracts()
		if err != nil {
			return &custody.Error{Kind: custody.EINVALID, Message: err.Error(), Err: err}
		}
		maps.Copy(extra, cs)
		if reg, err = contract.Load(contract.Options{Contracts: seedContracts(), Dir: g.contracts, Extra: extra}); err != nil {
			return err
		}
	}
	gcfg := g.gcfg
	gcfg.Registry = reg
	ups, err := s.up.Tools(ctx, g.pins)
	if err != nil {
		return &custody.Error{Kind: custody.EUNAVAILABLE, Message: err.Error(), Err: err}
	}
	var relay *upstream.Relay
	if s.up.Relays() {
		if relay, err = s.up.Relay(ctx, gcfg, g.pins); err != nil {
			return &custody.Error{Kind: custody.EUNAVAILABLE, Message: err.Error(), Err: err}
		}
	}
	gw, err := gate.New(gcfg, example.EnvelopeID, append(slices.Clone(g.base), ups...))
	if err != nil {
		return err
	}
	g.mu.Lock()
	s.reg, s.gw, s.relay, g.regRev, g.built = reg, gw, relay, rev, rev
	install := relay != nil && !g.relayCheck
	g.relayCheck = g.relayCheck || install
	g.mu.Unlock()
	if install {
		s.checks = append(s.checks, func(ctx context.Context, a custody.Approval) error {
			return s.currentRelay().Gateway().CheckApproval(ctx, a)
		})
	}
	return nil
}

// current returns the stack's gateway, registry and relay (nil without
// one), the latest built.
func (s *stack) current() (*gate.Gateway, *contract.Registry, mcpserver.Relay) {
	if s.gen != nil {
		s.gen.mu.Lock()
		defer s.gen.mu.Unlock()
	}
	return s.gw, s.reg, s.mcpRelay()
}

// gateway returns the stack's gateway, the latest one built.
func (s *stack) gateway() *gate.Gateway {
	if s.gen == nil {
		return s.gw
	}
	s.gen.mu.Lock()
	defer s.gen.mu.Unlock()
	return s.gw
}

// currentRelay returns the stack's relay, the latest one built.
func (s *stack) currentRelay() *upstream.Relay {
	if s.gen == nil {
		return s.relay
	}
	s.gen.mu.Lock()
	defer s.gen.mu.Unlock()
	return s.relay
}

// callMetrics returns the metrics of the stack's calls: one set for
// every gateway built, so that a rebuild resets no counter.
func (s *stack) callMetrics() *web.Metrics {
	if s.gen == nil {
		return web.NewMetrics(web.GovernedBy(s.gw))
	}
	s.gen.mu.Lock()
	defer s.gen.mu.Unlock()
	if s.gen.metrics == nil {
		s.gen.metrics = web.NewMetrics(func(tool string) bool { return web.GovernedBy(s.gateway())(tool) })
	}
	return s.gen.metrics
}

// upstreamHealth reports the upstream servers that are down, for /healthz.
func (s *stack) upstreamHealth() []web.UpstreamHealth {
	var out []web.UpstreamHealth
	for _, d := range s.up.Down() {
		out = append(out, web.UpstreamHealth{Name: d.Name, Error: d.Err, Waiting: d.Waiting, Connect: d.Connect})
	}
	return out
}

// healthOfUpstreams is web.Config.Upstreams: nil without upstreams.
func (s *stack) healthOfUpstreams() func() []web.UpstreamHealth {
	if s.up == nil {
		return nil
	}
	return s.upstreamHealth
}

// followUpstreams returns the root handler doors builds, and adds to sys
// the runner that builds the stack and the doors again each time a
// server lists for the first time: requests go to the latest doors. The
// MCP door serves on with the new gateway (mcpDoor), so that a session
// opened before stays open and is told the tool list changed. The domain
// apps are attached once.
func (m *Main) followUpstreams(st *stack, sys *servedSystems, doors func(servedSystems) (http.Handler, *web.Server, error)) (http.Handler, *web.Server, error) {
	if sys.Apps != nil {
		apps, err := sys.Apps(st)
		if err != nil {
			return nil, nil, err
		}
		sys.Apps = func(*stack) ([]web.App, error) { return apps, nil }
	}
	h, ws, err := doors(*sys)
	if err != nil || st.up == nil || st.gen == nil {
		return h, ws, err
	}
	var cur atomic.Pointer[http.Handler]
	cur.Store(&h)
	log := slog.New(slog.NewTextHandler(m.Stderr, nil))
	served := *sys
	sys.Runners = append(sys.Runners, func(ctx context.Context, st *stack) error {
		st.follow(ctx, log, func() error {
			h, _, err := doors(served)
			if err == nil {
				cur.Store(&h)
			}
			return err
		})
		return nil
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*cur.Load()).ServeHTTP(w, r) }), ws, nil
}

// follow builds the stack again each time a server lists for the first
// time, and then has rebuilt build the doors on it, until ctx ends.
func (s *stack) follow(ctx context.Context, log *slog.Logger, rebuilt func() error) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.up.Changed():
		}
		s.gen.mu.Lock()
		built := s.gen.built
		s.gen.mu.Unlock()
		if s.up.Revision() == built {
			continue
		}
		if err := s.regenerate(ctx); err != nil {
			log.Error("upstream came up, but its tools cannot be served", "err", err)
			continue
		}
		if err := rebuilt(); err != nil {
			log.Error("upstream came up, but the doors cannot serve its tools", "err", err)
			continue
		}
		log.Info("upstream tools changed: the doors serve them now")
	}
}

// followStdio has the stdio door srv serve the tools of each server that
// lists for the first time, in its one session, until ctx ends.
func (s *stack) followStdio(ctx context.Context, log *slog.Logger, srv *mcpserver.Server) {
	if s.up == nil || s.gen == nil {
		return
	}
	s.follow(ctx, log, func() error {
		gw, reg, relay := s.current()
		ok, err := srv.Update(gw, reg, relay)
		if err == nil && !ok {
			err = errors.New("its resources or prompts change what this session was told at its start: restart the MCP client to see them")
		}
		return err
	})
}

// mcpDoor is serve's /mcp door across the stack's rebuilds: the same MCP
// server serves on with each new gateway (mcpserver.Server.Update), so
// that the sessions clients opened stay open and are told the tool list
// changed; only where it cannot (the relay's capabilities changed) is a
// new one built, whose clients start new sessions.
type mcpDoor struct {
	ms      *mcpserver.Server
	handler http.Handler
}

// build returns the door's handler for st as it is now: the server built
// before, updated, else one newBuilt builds, served by handler.
func (d *mcpDoor) build(st *stack, newBuilt func() (*mcpserver.Server, error), handler func(*mcpserver.Server) http.Handler) (http.Handler, error) {
	if d.ms != nil {
		gw, reg, relay := st.current()
		ok, err := d.ms.Update(gw, reg, relay)
		if err != nil {
			return nil, err
		}
		if ok {
			return d.handler, nil
		}
	}
	ms, err := newBuilt()
	if err != nil {
		return nil, err
	}
	d.ms, d.handler = ms, handler(ms)
	return d.handler, nil
}
