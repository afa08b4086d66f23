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
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/httpjson"
	"github.com/custody-dev/custody/ledger"
	"github.com/custody-dev/custody/store/chaincheck"
	"github.com/custody-dev/custody/tlog"
)

// Config holds what the server needs. Gateway, Approvals, Ledger, Tokens
// and Sessions are required.
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
	// Verification reports the full verification of the chain run at
	// start; when set, /healthz and /metrics show it, and /healthz
	// answers 503 once it has failed, naming the first bad seq.
	Verification func() chaincheck.Status
	// Checkpoint returns the latest signed checkpoint; nil answers 503 on
	// /v1/ledger/checkpoint.
	Checkpoint func(ctx context.Context) (custody.Checkpoint, error)
	// Proofs serves Merkle proofs; nil answers 503 on /v1/ledger/proof
	// and /v1/ledger/consistency.
	Proofs Proofs
	// Witnesses reports the witnesses cosigning the checkpoints; when set,
	// /healthz details them and /metrics counts their refusals.
	Witnesses func() []tlog.WitnessStatus
	// Upstreams reports the upstream servers that are down; when set and
	// one is, /healthz says "degraded" (still 200: custody serves the
	// rest) and names each with its last error.
	Upstreams func() []UpstreamHealth
	// Commits counts the write transactions the store has committed;
	// when set, /metrics reports it, and entries over commits is how
	// many appends shared each commit.
	Commits func() int64
	Tokens  Tokens
	// Bearer, when set, checks a bearer token that is none of Tokens (an
	// access token of the team's IdP, package identity): its principal,
	// or a custody EUNAUTHORIZED error saying why it is refused.
	Bearer func(ctx context.Context, token string) (Principal, error)
	// IdP, when set, signs operators and auditors in to the console at the
	// team's OpenID provider (web/oidc.go), beside the sign-in link and
	// the token form.
	IdP *ConsoleIdP
	// Challenge, when set, is the WWW-Authenticate value of a 401 refusing
	// err (RFC 6750, with RFC 9728's resource_metadata).
	Challenge func(err error) string
	// Connector, when set, lets operators connect the upstreams that
	// take a person's authorization, with the console's Connect button
	// (connect.go).
	Connector Connector
	// ConnectRedirect is the redirect URI of those connections, the
	// console's public URL + ConnectCallbackPath; "" takes the URL the
	// operator's browser reached the console at.
	ConnectRedirect string
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
	// Sessions keeps the console's sign-ins (login codes and sessions, by
	// the SHA-256 of their secrets): give it the store's state, so that a
	// sign-in outlives a restart and every gateway on a shared store
	// honours it.
	Sessions custody.StateStore
	// SessionLifetime is how long a console sign-in lasts;
	// DefaultSessionLifetime when zero.
	SessionLifetime time.Duration
	// Schemas, when set, serves the tools' schemas on GET
	// /v1/tools/{name} (503 there when nil) and gives the console the
	// input schema of a tool, so that an edit form offers a fixed set of
	// values as a choice.
	Schemas Schemas
	// MaxBody caps every request body (DefaultMaxBody when 0); a larger
	// one is answered 413 without being read.
	MaxBody int64
	// BodyTimeout bounds the time a request body may take to arrive
	// (DefaultBodyTimeout when 0); a slower one is answered 408.
	BodyTimeout time.Duration
	// EventWriteTimeout bounds each write of the /v1/events stream, which
	// otherwise lives as long as its client: the stream extends its
	// connection's write deadline by this much before every event
	// (DefaultEventWriteTimeout when 0).
	EventWriteTimeout time.Duration
	// MaxWait caps how long POST /v1/calls holds a call for its approval
	// when the client asks with Prefer: wait=N: below the HTTP server's
	// write timeout, with room for the run and the answer
	// (DefaultMaxWait when 0).
	MaxWait time.Duration
}

// DefaultMaxWait caps Prefer: wait when Config.MaxWait is not set.
const DefaultMaxWait = 30 * time.Second

// DefaultEventWriteTimeout bounds each write of the event stream.
const DefaultEventWriteTimeout = 30 * time.Second

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

	// sessions are the console's sign-ins.
	sessions *sessions
	ids      *requestIDs
	// maxBody, bodyTimeout and eventWrite are the Config's, defaulted.
	maxBody     int64
	bodyTimeout time.Duration
	eventWrite  time.Duration
}

// New returns a server for cfg, or an error naming the missing field.
func New(cfg Config) (*Server, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, metrics: cfg.Metrics, ids: newRequestIDs(),
		maxBody: cmp.Or(cfg.MaxBody, DefaultMaxBody), bodyTimeout: cmp.Or(cfg.BodyTimeout, DefaultBodyTimeout),
		eventWrite: cmp.Or(cfg.EventWriteTimeout, DefaultEventWriteTimeout)}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.metrics == nil {
		s.metrics = NewMetrics(GovernedBy(cfg.Gateway))
	}
	if s.cfg.Now == nil {
		s.cfg.Now = time.Now
	}
	s.sessions = newSessions(s.cfg.Sessions, s.cfg.Tokens, s.cfg.IdP, s.cfg.Now, s.cfg.SessionLifetime)
	mux, err := s.routes()
	if err != nil {
		return nil, err
	}
	s.handler = s.withRequestID(http.NewCrossOriginProtection().Handler(mux))
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
	case c.Sessions == nil:
		return errors.New("web: Config.Sessions is required")
	case c.MaxBody < 0 || c.BodyTimeout < 0 || c.EventWriteTimeout < 0 || c.MaxWait < 0:
		return errors.New("web: Config.MaxBody, BodyTimeout, EventWriteTimeout and MaxWait may not be negative")
	}
	return nil
}

// Handler returns the root handler: API, metrics, health and console.
// Cross-origin browser requests that change state are refused.
func (s *Server) Handler() http.Handler { return s.handler }

// route is one endpoint of the API: a method and a path pattern. The
// OpenAPI document describes every /v1 route (TestOpenAPIMatchesRoutes).
type route struct {
	method, path string
	h            http.HandlerFunc
}

func (s *Server) api() []route {
	return []route{
		{"POST", "/v1/calls", s.require(s.handleCall, RoleAgent)},
		{"GET", "/v1/tools", s.require(s.handleTools, allRoles()...)},
		{"GET", "/v1/tools/{name}", s.require(s.handleTool, allRoles()...)},
		{"GET", "/v1/openapi.json", s.handleOpenAPI},
		{"GET", "/v1/approvals", s.require(s.handleApprovals, readers()...)},
		{"GET", "/v1/approvals/{id}", s.require(s.handleApproval, allRoles()...)},
		{"GET", "/v1/approvals/{id}/form", s.require(s.handleForm, readers()...)},
		{"POST", "/v1/console/login-link", s.require(s.handleLoginLink, readers()...)},
		{"POST", "/v1/approvals/{id}/decision", s.require(s.handleDecision, RoleOperator)},
		{"GET", "/v1/grants", s.require(s.handleGrants, readers()...)},
		{"POST", "/v1/grants/{id}/revoke", s.require(s.handleRevoke, RoleOperator)},
		{"POST", "/v1/upstreams/{name}/connect", s.require(s.handleConnect, RoleOperator)},
		{"GET", "/v1/ledger", s.require(s.handleLedger, readers()...)},
		{"GET", "/v1/ledger/verify", s.require(s.handleVerify, readers()...)},
		{"GET", "/v1/ledger/checkpoint", s.require(s.handleCheckpoint, readers()...)},
		{"GET", "/v1/ledger/proof", s.require(s.handleProof, allRoles()...)},
		{"GET", "/v1/ledger/consistency", s.require(s.handleConsistency, allRoles()...)},
		{"GET", "/v1/console", s.require(s.handleConsole, allRoles()...)},
		{"GET", "/v1/events", s.require(s.handleEvents, readers()...)},
		{"GET", "/healthz", s.handleHealth},
		{"GET", "/metrics", s.handleMetricsAll},
	}
}

func (s *Server) routes() (*http.ServeMux, error) {
	mux := http.NewServeMux()
	allow := map[string][]string{}
	var paths []string
	for _, rt := range s.api() {
		mux.HandleFunc(rt.method+" "+rt.path, rt.h)
		if allow[rt.path] == nil {
			paths = append(paths, rt.path)
		}
		allow[rt.path] = append(allow[rt.path], rt.method)
	}
	for _, p := range paths {
		mux.HandleFunc(p, s.methodNotAllowed(allow[p]))
	}
	mux.HandleFunc("/v1/", s.handleNotFound)
	if err := s.mountConsole(mux); err != nil {
		return nil, err
	}
	return mux, s.mountApps(mux)
}

// methodNotAllowed answers a known path asked with a method it does not
// serve: 405, with the methods it does serve in Allow.
func (s *Server) methodNotAllowed(methods []string) http.HandlerFunc {
	if slices.Contains(methods, "GET") {
		methods = append(slices.Clone(methods), "HEAD")
	}
	allow := strings.Join(methods, ", ")
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		s.writeError(w, r, httpjson.WithStatus(http.StatusMethodNotAllowed, "%s %s is not served: use %s", r.Method, r.URL.Path, allow))
	}
}

func (s *Server) handleNotFound(w http.ResponseWriter, r *http.Request) {
	s.writeError(w, r, custody.Errorf(custody.ENOTFOUND, "no such endpoint: %s %s", r.Method, r.URL.Path))
}

// handleHealth answers 200 while the ledger answers, the store can write
// and its chain has not failed its verification at start, 503 otherwise,
// with the reason: a supervisor restarts on it, and an operator reads
// why.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	_, err := s.cfg.Ledger.Head(ctx)
	if err == nil && s.cfg.Health != nil {
		err = s.cfg.Health(ctx)
	}
	if err == nil {
		err = s.verificationErr()
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
	writeJSON(w, http.StatusOK, s.healthz())
}
