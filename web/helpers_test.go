package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/example"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/internal/gatetest"
	"github.com/custody-dev/custody/internal/testclock"
	"github.com/custody-dev/custody/store/sqlite"
	"github.com/custody-dev/custody/web"
)

// Tokens of the test principals.
const (
	agentToken    = "agent-token-0123456789"
	agent2Token   = "agent2-token-0123456789"
	operatorToken = "operator-token-0123456789"
	auditorToken  = "auditor-token-0123456789"
)

// env is a real server on 127.0.0.1 over a real SQLite data directory with
// the example envelope and the test tools.
type env struct {
	t         testing.TB
	db        *sqlite.DB
	ledger    *gatetest.FlakyLedger
	approvals *approval.Service
	gw        *gate.Gateway
	clock     *testclock.Clock
	srv       *httptest.Server
	// runs counts the runs of the test tools' handlers.
	runs atomic.Int64
}

// newEnv starts the server with apps mounted.
func newEnv(t testing.TB, apps ...web.App) *env {
	t.Helper()
	return newEnvWith(t, nil, apps...)
}

// newEnvWith is newEnv with the server's config changed by configure.
func newEnvWith(t testing.TB, configure func(*web.Config), apps ...web.App) *env {
	t.Helper()
	e := &env{t: t, clock: testclock.New(time.Now().UTC())}
	db, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	e.db, e.ledger = db, &gatetest.FlakyLedger{Ledger: db}
	name, raw := example.Contract()
	reg, err := contract.Load(contract.Options{Extra: map[string][]byte{name: raw, gatetest.ContractFile: []byte(gatetest.Contract)}})
	if err != nil {
		t.Fatalf("load contracts: %v", err)
	}
	// As in serve, the gateway built after the service checks what an
	// operator approves.
	validate := func(ctx context.Context, a custody.Approval) error { return e.gw.CheckApproval(ctx, a) }
	checkGrant := func(ctx context.Context, g custody.Grant) error { return e.gw.CheckGrant(ctx, g) }
	e.approvals, err = approval.New(approval.Config{Store: db, Ledger: e.ledger, Now: e.clock.Now, Validate: validate, State: db, CheckGrant: checkGrant,
		Changes: db.ApprovalChanges})
	if err != nil {
		t.Fatalf("approvals: %v", err)
	}
	tools := append(example.Tools(db, e.clock.Now), gatetest.Tools(&e.runs)...)
	e.gw, err = gate.New(gate.Config{Registry: reg, Ledger: e.ledger, Approvals: e.approvals, State: db, Now: e.clock.Now, Logger: slog.New(slog.DiscardHandler)}, example.EnvelopeID, tools)
	if err != nil {
		t.Fatalf("gateway: %v", err)
	}
	tokens, err := web.ParseTokens("agent-1:"+agentToken+",agent-2:"+agent2Token, "op-1:"+operatorToken, "aud-1:"+auditorToken)
	if err != nil {
		t.Fatalf("tokens: %v", err)
	}
	cfg := web.Config{
		Gateway: e.gw, Approvals: e.approvals, Ledger: e.ledger, Verify: db.Verify, Health: db.Health,
		Checkpoint: db.LatestCheckpoint, Proofs: db, Commits: db.Commits, Tokens: tokens, Sessions: db, Now: e.clock.Now, Apps: apps,
		Schemas: reg,
	}
	if configure != nil {
		configure(&cfg)
	}
	s, err := web.New(cfg)
	if err != nil {
		t.Fatalf("web.New: %v", err)
	}
	e.srv = httptest.NewServer(s.Handler())
	t.Cleanup(e.srv.Close)
	return e
}

// response is a decoded API answer.
type response struct {
	Status int
	Body   []byte
	Header http.Header
}

// Error returns the error member of an error body.
func (r response) Error(t testing.TB) errorDetail {
	t.Helper()
	var b struct {
		Error *errorDetail `json:"error"`
	}
	if err := json.Unmarshal(r.Body, &b); err != nil || b.Error == nil {
		t.Fatalf("status %d: not an error body: %s", r.Status, r.Body)
	}
	return *b.Error
}

type errorDetail struct {
	Kind              string              `json:"kind"`
	Message           string              `json:"message"`
	Violations        []custody.Violation `json:"violations"`
	ApprovalRequestID string              `json:"approval_request_id"`
	ExpiresAt         string              `json:"expires_at"`
	TraceID           string              `json:"trace_id"`
	Receipt           *custody.Receipt    `json:"receipt"`
}

// do sends a request with token (none when empty) and returns the answer.
func (e *env) do(method, path, token string, body []byte) response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return e.send(req)
}

// send sends req and returns the answer.
func (e *env) send(req *http.Request) response {
	e.t.Helper()
	res, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatalf("read body: %v", err)
	}
	return response{Status: res.StatusCode, Body: b, Header: res.Header}
}

// call posts a call with the exact argument bytes args.
func (e *env) call(trace, tool, args string) response {
	e.t.Helper()
	return e.callAs(agentToken, trace, tool, args)
}

// callAs calls as the agent holding token.
func (e *env) callAs(token, trace, tool, args string) response {
	e.t.Helper()
	body := `{"tool":` + quote(tool) + `,"arguments":` + args
	if trace != "" {
		body += `,"trace_id":` + quote(trace)
	}
	return e.do("POST", "/v1/calls", token, []byte(body+"}"))
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// entries returns the ledger entries of a trace and kind.
func (e *env) entries(trace, kind string) []custody.Entry {
	e.t.Helper()
	es, err := e.db.Entries(context.Background(), custody.Query{Trace: trace, Kind: kind})
	if err != nil {
		e.t.Fatalf("read ledger: %v", err)
	}
	return es
}

// decide posts a decision as the operator.
func (e *env) decide(id, body string) response {
	e.t.Helper()
	return e.do("POST", "/v1/approvals/"+id+"/decision", operatorToken, []byte(body))
}
