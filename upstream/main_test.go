package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/internal/testclock"
	"github.com/custody-dev/custody/store/sqlite"
)

// The environment of the test binary re-executed as a stdio MCP server.
const (
	// envChild selects what the child does: childServe, childExit,
	// childGarbage or childSilent.
	envChild = "CUSTODY_UPSTREAM_TEST_CHILD"
	// envGate names a file the child reads as it starts: when it holds
	// "refuse", the child exits at once instead of serving.
	envGate = "CUSTODY_UPSTREAM_TEST_GATE"
	// envCancelled names a file the block tool writes once its call is
	// cancelled.
	envCancelled = "CUSTODY_UPSTREAM_TEST_CANCELLED"
	// envPIDFile names a file the child writes its process id to.
	envPIDFile = "CUSTODY_UPSTREAM_TEST_PIDFILE"
	// envStderr is written to the child's stderr before it serves.
	envStderr = "CUSTODY_UPSTREAM_TEST_STDERR"
	// envDescription replaces the echo tool's description.
	envDescription = "CUSTODY_UPSTREAM_TEST_DESCRIPTION"
	// envValue and envInherited are reported by the where tool.
	envValue     = "CUSTODY_UPSTREAM_TEST_VALUE"
	envInherited = "CUSTODY_UPSTREAM_TEST_INHERITED"
)

// Child modes.
const (
	childServe   = "serve"
	childExit    = "exit"
	childGarbage = "garbage"
	childSilent  = "silent"
)

// TestMain lets the test binary stand in for an upstream MCP server: run
// with envChild set, it is the child that mode names.
func TestMain(m *testing.M) {
	if mode := os.Getenv(envChild); mode != "" {
		os.Exit(runChild(mode))
	}
	os.Exit(m.Run())
}

// runChild is the re-executed test binary.
func runChild(mode string) int {
	if f := os.Getenv(envPIDFile); f != "" {
		os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o600)
	}
	switch mode {
	case childExit:
		fmt.Fprintln(os.Stderr, "cannot start: no licence")
		return 2
	case childGarbage:
		fmt.Fprintln(os.Stdout, "this is not JSON-RPC")
		io.Copy(io.Discard, os.Stdin)
		return 0
	case childSilent:
		io.Copy(io.Discard, os.Stdin)
		return 0
	}
	if f := os.Getenv(envGate); f != "" {
		if b, _ := os.ReadFile(f); strings.TrimSpace(string(b)) == "refuse" {
			fmt.Fprintln(os.Stderr, "refusing to start")
			return 1
		}
	}
	os.Stderr.WriteString(os.Getenv(envStderr))
	err := childServer(os.Getenv(envDescription)).Run(context.Background(), &mcp.StdioTransport{})
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

type echoIn struct {
	Message string `json:"message"`
}

type echoOut struct {
	Echo string `json:"echo"`
}

type whereOut struct {
	Value     string `json:"value"`
	Inherited string `json:"inherited"`
	Dir       string `json:"dir"`
	PID       int    `json:"pid"`
}

// defaultDescription is the echo tool's description unless told.
const defaultDescription = "Echo a message back."

// childServer is the MCP server the child serves: echo, where (its
// environment, directory and process id), crash (exits mid-call), block
// (answers only when the call is cancelled) and fail (a tool error), with
// the note resource and the hello prompt (addNote).
func childServer(description string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream-test", Version: "1"}, nil)
	addEcho(s, cmpOr(description, defaultDescription))
	mcp.AddTool(s, &mcp.Tool{Name: "where", Description: "Say where the server runs."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, whereOut, error) {
			dir, _ := os.Getwd()
			return nil, whereOut{Value: os.Getenv(envValue), Inherited: os.Getenv(envInherited), Dir: dir, PID: os.Getpid()}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exit mid-call."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			os.Exit(3)
			return nil, nil, nil
		})
	addBlock(s)
	addNote(s)
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Fail on purpose."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return nil, nil, errors.New("the tool failed on purpose")
		})
	return s
}

// addEcho adds the echo tool with the given description.
func addEcho(s *mcp.Server, description string) {
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: description, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
			return nil, echoOut{Echo: in.Message}, nil
		})
}

// addBlock adds a tool that answers only once its call is cancelled.
func addBlock(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "block", Description: "Wait until cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			<-ctx.Done()
			if f := os.Getenv(envCancelled); f != "" {
				os.WriteFile(f, []byte("cancelled"), 0o600)
			}
			return nil, nil, ctx.Err()
		})
}

// stdioServer declares the test binary as a stdio server in mode serve,
// with env added to the child's environment.
func stdioServer(name string, env map[string]string) Server {
	e := map[string]string{envChild: childServe}
	for k, v := range env {
		e[k] = v
	}
	return Server{Name: name, Command: os.Args[0], Env: e}
}

// dial dials srv and closes the connection when the test ends.
func dial(t *testing.T, srv Server, opts ConnOptions) *Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, srv, opts)
	if err != nil {
		t.Fatalf("dial %s: %v", srv.Name, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitFor polls cond until it holds, failing the test after a deadline
// generous enough for a busy machine.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// signal is a ToolsChanged callback that counts its calls.
type signal struct {
	n  atomic.Int64
	ch chan struct{}
}

func newSignal() *signal { return &signal{ch: make(chan struct{}, 100)} }

func (s *signal) fire() {
	s.n.Add(1)
	select {
	case s.ch <- struct{}{}:
	default:
	}
}

// wait returns once the callback was called again.
func (s *signal) wait(t *testing.T, what string) {
	t.Helper()
	select {
	case <-s.ch:
	case <-time.After(60 * time.Second):
		t.Fatalf("gave up waiting for %s", what)
	}
}

// logged is one record a logRecorder kept.
type logged struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

// logRecorder keeps what is logged through its handler.
type logRecorder struct {
	mu      sync.Mutex
	records []logged
}

func (r *logRecorder) logger() *slog.Logger { return slog.New(&recordHandler{r: r}) }

// find returns the records with the given message.
func (r *logRecorder) find(msg string) []logged {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []logged
	for _, l := range r.records {
		if l.msg == msg {
			out = append(out, l)
		}
	}
	return out
}

type recordHandler struct {
	r     *logRecorder
	attrs []slog.Attr
}

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *recordHandler) Handle(_ context.Context, rec slog.Record) error {
	l := logged{level: rec.Level, msg: rec.Message, attrs: map[string]string{}}
	for _, a := range h.attrs {
		l.attrs[a.Key] = a.Value.String()
	}
	rec.Attrs(func(a slog.Attr) bool {
		l.attrs[a.Key] = a.Value.String()
		return true
	})
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	h.r.records = append(h.r.records, l)
	return nil
}

func (h *recordHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &recordHandler{r: h.r, attrs: append(append([]slog.Attr{}, h.attrs...), attrs...)}
}

func (h *recordHandler) WithGroup(string) slog.Handler { return h }

// httpUpstream is an MCP server served over streamable HTTP on a real
// port. Restart replaces it with a new server, as a redeployed service
// is: the sessions of the old one are gone.
type httpUpstream struct {
	srv *httptest.Server

	mu      sync.Mutex
	server  *mcp.Server
	handler http.Handler
	headers []http.Header
}

// newHTTPUpstream serves the server build returns.
func newHTTPUpstream(t *testing.T, build func() *mcp.Server) *httpUpstream {
	t.Helper()
	u := &httpUpstream{}
	u.set(build())
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.headers = append(u.headers, r.Header.Clone())
		h := u.handler
		u.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		// A session left open must fail its test, not hang it.
		u.srv.CloseClientConnections()
		u.srv.Close()
	})
	return u
}

func (u *httpUpstream) set(s *mcp.Server) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.server = s
	u.handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
}

// URL is the server's endpoint.
func (u *httpUpstream) URL() string { return u.srv.URL }

// Server returns the MCP server serving now.
func (u *httpUpstream) Server() *mcp.Server {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.server
}

// Restart serves a new server and cuts every open connection.
func (u *httpUpstream) Restart(s *mcp.Server) {
	u.set(s)
	u.srv.CloseClientConnections()
}

// Headers returns the headers of every request so far.
func (u *httpUpstream) Headers() []http.Header {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]http.Header(nil), u.headers...)
}

// echoServer is an MCP server with the echo and block tools.
func echoServer(description string) func() *mcp.Server {
	return func() *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "http-test", Version: "1"}, nil)
		addEcho(s, description)
		addBlock(s)
		return s
	}
}

// fixture is a real SQLite store with the approvals and pins custody
// keeps in it, on a clock that moves only when told.
type fixture struct {
	db        *sqlite.DB
	approvals *approval.Service
	pins      *Pins
	clock     *testclock.Clock
	dir       string
}

// newFixture opens a store in a new directory.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	return openFixture(t, t.TempDir(), testclock.New(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)))
}

// openFixture opens the store in dir, as custody does on each start.
func openFixture(t *testing.T, dir string, clock *testclock.Clock) *fixture {
	t.Helper()
	db, err := sqlite.Open(context.Background(), dir, sqlite.Options{Now: clock.Now})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	svc, err := approval.New(approval.Config{Store: db, Ledger: db, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	p := NewPins(db, db, svc)
	p.now = clock.Now
	return &fixture{db: db, approvals: svc, pins: p, clock: clock, dir: dir}
}
