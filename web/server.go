// Package web serves the custody HTTP API under /v1, the Prometheus
// metrics, the health check and the embedded operator console: an approval
// inbox that works on a phone and a ledger browser.
//
// Every request that reads or changes anything carries a bearer token
// (the Authorization header, or the console's HttpOnly cookie set by
// /login) and is allowed by the token's role. /healthz and /metrics need
// no token: they expose liveness and counts, never arguments, bodies or
// identities.
package web

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/ledger"
	"github.com/custody-dev/custody/tlog"
)

// Config holds what the server needs. Gateway, Approvals, Ledger and
// Tokens are required.
type Config struct {
	Gateway   *gate.Gateway
	Approvals *approval.Service
	Ledger    custody.Ledger
	// Verify checks the whole ledger chain; nil answers 503 on
	// /v1/ledger/verify.
	Verify func(ctx context.Context) (ledger.Report, error)
	// Health reports whether the store can write; nil leaves /healthz to
	// the ledger's Head alone.
	Health func(ctx context.Context) error
	// Checkpoint returns the latest signed checkpoint; nil answers 503 on
	// /v1/ledger/checkpoint.
	Checkpoint func(ctx context.Context) (custody.Checkpoint, error)
	// Proofs serves Merkle proofs; nil answers 503 on /v1/ledger/proof
	// and /v1/ledger/consistency.
	Proofs Proofs
	// Witnesses reports the witnesses cosigning the checkpoints; when set,
	// /healthz details them and /metrics counts their refusals.
	Witnesses func() []tlog.WitnessStatus
	// Commits counts the write transactions the store has committed;
	// when set, /metrics reports it, and entries over commits is how
	// many appends shared each commit.
	Commits func() int64
	Tokens  Tokens
	// Apps are domain systems mounted at /apps/{Name}/ and linked from
	// the console.
	Apps []App
	// Metrics receives every call; nil makes a fresh one. Share it with
	// the other front doors so /metrics counts them all.
	Metrics *Metrics
	Logger  *slog.Logger
	Now     func() time.Time
	// ApprovalChanges, when set, sends the id of every approval that
	// changes until ctx ends; GET /v1/events streams them to the console.
	ApprovalChanges func(ctx context.Context) (<-chan string, error)
}

// App is a domain system's console page and JSON API, mounted at
// /apps/{Name}/ with the prefix stripped and linked from the console nav.
// Operators and auditors reach it; the handler tells them apart with
// PrincipalFrom.
type App struct {
	Name    string
	Title   string
	Handler http.Handler
}

// Server is the HTTP API and operator console.
type Server struct {
	cfg     Config
	log     *slog.Logger
	metrics *Metrics
	handler http.Handler
}

// New returns a server for cfg, or an error naming the missing field.
func New(cfg Config) (*Server, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, metrics: cfg.Metrics}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.metrics == nil {
		s.metrics = NewMetrics()
	}
	if s.cfg.Now == nil {
		s.cfg.Now = time.Now
	}
	mux, err := s.routes()
	if err != nil {
		return nil, err
	}
	s.handler = http.NewCrossOriginProtection().Handler(mux)
	return s, nil
}

func (c *Config) check() error {
	switch {
	case c.Gateway == nil:
		return errors.New("web: Config.Gateway is required")
	case c.Approvals == nil:
		return errors.New("web: Config.Approvals is required")
	case c.Ledger == nil:
		return errors.New("web: Config.Ledger is required")
	case c.Tokens == nil:
		return errors.New("web: Config.Tokens is required (it may be empty)")
	}
	return nil
}

// Handler returns the root handler: API, metrics, health and console.
// Cross-origin browser requests that change state are refused.
func (s *Server) Handler() http.Handler { return s.handler }

// Metrics returns the metrics the server reports on /metrics.
func (s *Server) Metrics() *Metrics { return s.metrics }

func (s *Server) routes() (*http.ServeMux, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/calls", s.require(s.handleCall, RoleAgent))
	mux.HandleFunc("GET /v1/tools", s.require(s.handleTools, allRoles()...))
	mux.HandleFunc("GET /v1/approvals", s.require(s.handleApprovals, readers()...))
	mux.HandleFunc("GET /v1/approvals/{id}", s.require(s.handleApproval, allRoles()...))
	mux.HandleFunc("POST /v1/approvals/{id}/decision", s.require(s.handleDecision, RoleOperator))
	mux.HandleFunc("GET /v1/ledger", s.require(s.handleLedger, readers()...))
	mux.HandleFunc("GET /v1/ledger/verify", s.require(s.handleVerify, readers()...))
	mux.HandleFunc("GET /v1/ledger/checkpoint", s.require(s.handleCheckpoint, readers()...))
	mux.HandleFunc("GET /v1/ledger/proof", s.require(s.handleProof, allRoles()...))
	mux.HandleFunc("GET /v1/ledger/consistency", s.require(s.handleConsistency, allRoles()...))
	mux.HandleFunc("GET /v1/console", s.require(s.handleConsole, allRoles()...))
	mux.HandleFunc("GET /v1/events", s.require(s.handleEvents, readers()...))
	mux.HandleFunc("/v1/", s.handleNotFound)
	mux.HandleFunc("GET /healthz", s.handleHealth)
	mux.HandleFunc("GET /metrics", s.handleMetrics)
	if err := s.mountConsole(mux); err != nil {
		return nil, err
	}
	return mux, s.mountApps(mux)
}

func (s *Server) handleNotFound(w http.ResponseWriter, r *http.Request) {
	s.writeError(w, r, custody.Errorf(custody.ENOTFOUND, "no such endpoint: %s %s", r.Method, r.URL.Path))
}

// handleHealth answers 200 while the ledger answers and the store can
// write, 503 otherwise, with the store's reason: a supervisor restarts on
// it, and an operator reads why.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	_, err := s.cfg.Ledger.Head(ctx)
	if err == nil && s.cfg.Health != nil {
		err = s.cfg.Health(ctx)
	}
	if err != nil {
		msg := "ledger unavailable"
		var ce *custody.Error
		if errors.As(err, &ce) && ce.Kind == custody.EUNAVAILABLE {
			msg += ": " + ce.Message
		}
		s.writeError(w, r, &custody.Error{Kind: custody.EUNAVAILABLE, Message: msg, Err: err})
		return
	}
	writeJSON(w, http.StatusOK, s.health())
}
