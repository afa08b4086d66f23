package upstream

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody/gate"
)

// Restart backoff of a server whose session ended: the first restart
// comes after minBackoff, each failed one doubles the wait up to
// maxBackoff, and a session that lived stableAfter resets it.
const (
	minBackoff  = 200 * time.Millisecond
	maxBackoff  = 30 * time.Second
	stableAfter = 10 * time.Second
)

// Server declares one upstream MCP server, in the shape MCP clients'
// configuration files use: a Command (with Args, Env and Dir) that
// custody starts and talks to over stdio, or the URL of a streamable HTTP
// endpoint (with Headers).
type Server struct {
	Name    string
	Command string
	Args    []string
	Env     map[string]string
	Dir     string
	URL     string
	Headers map[string]string
	// SSE says the URL serves the legacy HTTP+SSE transport (MCP
	// 2024-11-05) rather than streamable HTTP.
	SSE bool
	// Timeout bounds each run of the server's tools whose policy sets no
	// timeout; zero leaves the gateway's deadline.
	Timeout time.Duration
	// Prefix is put before the names of the server's tools and prompts;
	// nil for the default, NAME__. When it is "" the server's resources
	// keep their URIs too; otherwise they are exposed as NAME+URI.
	Prefix *string
	// ClientFeatures are the requests of the client the server may make
	// (FeatureSampling, FeatureElicitation); roots are always relayed.
	ClientFeatures []string
	// OAuth, for a server at a URL, makes custody obtain its own access
	// token for it and send it on every request (oauth.go).
	OAuth *OAuth
}

// Stdio reports whether custody starts the server itself.
func (s Server) Stdio() bool { return s.Command != "" }

// Conn is a supervised session with one upstream MCP server. A stdio
// server that exits is started again with backoff; a call made while the
// session is down waits for it to be back, until the call's context ends
// (the tool's timeout), and then fails as unavailable. A request that
// went out is never sent again behind the caller's back: one server's
// broken session fails the calls in flight on it, not the next one.
// Conn is safe for concurrent use.
type Conn struct {
	srv    Server
	log    *slog.Logger
	client *mcp.Client
	// changed is told when the server says its tool list changed.
	changed func()
	// updated is told of the server's resources/updated notifications.
	updated func(uri string)
	// flights are the calls in flight, by client (client.go).
	flights flights
	askFn   AskFunc
	logTo   func(ctx context.Context, p *logMessage)
	// cred holds the server's access token; nil without OAuth.
	cred *credential
	// back is closed when a session is had again or Conn closes; nil
	// while a session is up.
	back chan struct{}
	// level is the logging level a client last set ("" for none), set
	// again on every new session.
	level logLevel
	// httpOrder counts the progress and log notifications read from the
	// server's event streams and relayed, when the SDK reads them.
	httpOrder relayOrder

	mu      sync.Mutex
	session *mcp.ClientSession
	// raw is session's connection where custody sends a tools/call itself
	// (rawcall.go); nil where the SDK does.
	raw     *rawConn
	tools   []*mcp.Tool
	feats   features        // resources, templates and prompts (features.go)
	subs    map[string]bool // the server's URIs custody subscribed to
	down    error           // why there is no session, when session is nil
	listed  bool            // a session was had: tools holds its listing
	closed  bool
	stop    context.CancelFunc
	restart chan struct{}
	// nudge cuts a wait between restarts short: the reason of the last
	// failure is gone (an operator connected the server).
	nudge chan struct{}
	done  chan struct{}
	// minWait and maxWait bound the wait between restarts.
	minWait, maxWait time.Duration
}

// ConnOptions configures Dial. Every field is optional.
type ConnOptions struct {
	// Logger receives the server's stderr and the session's life.
	Logger *slog.Logger
	// ToolsChanged is called (on its own goroutine) after the tool list
	// was fetched again, because the server said it changed or because
	// the server was restarted.
	ToolsChanged func()
	// ResourceUpdated is told the URI (the server's own) of every
	// notifications/resources/updated the server sends.
	ResourceUpdated func(uri string)
	// Version is the client version custody reports.
	Version string
	// Ask governs and records the server's requests of a client
	// (client.go); without it they are answered with an error.
	Ask AskFunc
	// Log receives the server's log messages while no call is in flight
	// on it; they are dropped when nil.
	Log func(ctx context.Context, p *logMessage)
	// Required makes Dial fail when the first session cannot be had, as
	// a gateway started with --require-all-upstreams must. Without it
	// Dial returns a Conn that is down (Err says why) and keeps trying,
	// with backoff, until Close.
	Required bool
	// MinBackoff and MaxBackoff bound the wait between attempts to
	// (re)start the session; minBackoff and maxBackoff when zero.
	MinBackoff, MaxBackoff time.Duration
	// Tokens keeps the access tokens of a server with OAuth, sealed;
	// nil: in memory only.
	Tokens *TokenVault
}

// Dial starts (or connects to) srv, initialises an MCP session, lists its
// tools and keeps the session up until Close. A server that cannot be
// reached is kept as a down Conn whose supervisor keeps trying: one
// server down does not stop a gateway, and its tools appear when it
// comes up (ToolsChanged is told). With opts.Required, or when ctx ends
// first, Dial fails instead. A server declared wrong always fails.
func Dial(ctx context.Context, srv Server, opts ConnOptions) (*Conn, error) {
	if (srv.Command == "") == (srv.URL == "") {
		return nil, fmt.Errorf("upstream %q: give either a command or a url", srv.Name)
	}
	c := &Conn{srv: srv, log: opts.Logger, changed: opts.ToolsChanged, updated: opts.ResourceUpdated,
		askFn: opts.Ask, logTo: opts.Log,
		restart: make(chan struct{}, 1), nudge: make(chan struct{}, 1), done: make(chan struct{}), back: make(chan struct{}),
		minWait: cmp.Or(opts.MinBackoff, minBackoff), maxWait: cmp.Or(opts.MaxBackoff, maxBackoff)}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.log = c.log.With("upstream", srv.Name)
	if err := c.useOAuth(opts.Tokens); err != nil {
		return nil, err
	}
	c.client = mcp.NewClient(&mcp.Implementation{Name: "custody", Version: cmpOr(opts.Version, "dev")}, c.clientOptions())
	c.client.AddReceivingMiddleware(c.askMiddleware)
	if err := c.connect(ctx); err != nil {
		if opts.Required || ctx.Err() != nil {
			return nil, err
		}
		c.mu.Lock()
		c.down = err
		c.mu.Unlock()
		c.log.Warn("upstream cannot be reached; retrying", "err", err)
		c.restart <- struct{}{}
	}
	supervise, stop := context.WithCancel(context.Background())
	c.stop = stop
	go c.supervise(supervise)
	return c, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// connect opens a session and lists the tools.
func (c *Conn) connect(ctx context.Context) error {
	if err := c.authorize(ctx); err != nil {
		return err
	}
	t, err := c.transport()
	if err != nil {
		return err
	}
	var rt *rawTransport
	if c.srv.Stdio() {
		rt = &rawTransport{next: t}
		t = rt
	}
	s, err := c.client.Connect(ctx, t, c.sessionOptions())
	if err != nil {
		return fmt.Errorf("upstream %q: connect: %w", c.srv.Name, err)
	}
	var raw *rawConn
	if rt != nil {
		raw = rt.conn
		raw.version = s.InitializeResult().ProtocolVersion
		if sc, ok := raw.Connection.(*stdioConn); ok {
			sc.setVersion(raw.version)
		}
	}
	tools, err := listTools(ctx, s)
	if err != nil {
		s.Close()
		return fmt.Errorf("upstream %q: list tools: %w", c.srv.Name, err)
	}
	feats, err := listFeatures(ctx, s)
	if err != nil {
		s.Close()
		return fmt.Errorf("upstream %q: %w", c.srv.Name, err)
	}
	c.restoreLevel(ctx, s)
	c.mu.Lock()
	if c.closed {
		// Close ran while this session was being opened, and will not
		// see it: end it here, or a stdio server outlives its Conn.
		c.mu.Unlock()
		s.Close()
		return fmt.Errorf("upstream %q: closed", c.srv.Name)
	}
	c.session, c.raw, c.tools, c.feats, c.down, c.listed = s, raw, tools, feats, nil, true
	c.wake()
	c.mu.Unlock()
	go func() {
		s.Wait()
		c.lost(s)
	}()
	return nil
}

// listTools reads every page of tools/list; a server that declares no
// tools capability (one that offers only resources or prompts) has none.
func listTools(ctx context.Context, s *mcp.ClientSession) ([]*mcp.Tool, error) {
	if r := s.InitializeResult(); r != nil && r.Capabilities != nil && r.Capabilities.Tools == nil {
		return nil, nil
	}
	var out []*mcp.Tool
	for t, err := range s.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// transport returns a new transport to the server.
func (c *Conn) transport() (mcp.Transport, error) {
	if c.srv.URL != "" {
		capped := eventCapTransport{next: limitTransport{http.DefaultTransport}, max: maxMessageBytes, order: &c.httpOrder}
		hc := &http.Client{Transport: headerTransport{headers: c.srv.Headers, next: c.bearer(capped)}}
		if c.srv.SSE {
			return sseTransport{&mcp.SSEClientTransport{Endpoint: c.srv.URL, HTTPClient: hc}}, nil
		}
		return &mcp.StreamableClientTransport{Endpoint: c.srv.URL, HTTPClient: hc, MaxRetries: -1}, nil
	}
	cmd := exec.Command(c.srv.Command, c.srv.Args...)
	cmd.Dir = c.srv.Dir
	cmd.Env = os.Environ()
	for _, k := range slices.Sorted(maps.Keys(c.srv.Env)) {
		cmd.Env = append(cmd.Env, k+"="+c.srv.Env[k])
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("upstream %q: %w", c.srv.Name, err)
	}
	go c.logStderr(stderr)
	return &stdioTransport{cmd: cmd, terminate: 2 * time.Second}, nil
}

// maxLogLine is how much of one stderr line reaches the log.
const maxLogLine = 4096

// logStderr sends a stdio server's stderr to custody's log, a line at a
// time, never to the agent. It reads until the stream ends, however long a
// line is: a server whose stderr nobody drains blocks on its next write,
// and its calls with it. Of a longer line the log gets the first
// maxLogLine bytes.
func (c *Conn) logStderr(r io.Reader) {
	br := bufio.NewReaderSize(r, maxLogLine)
	cut := false // the rest of an over-long line is being skipped
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case len(line) > 0 && !cut:
			c.log.Info("upstream stderr", "line", strings.TrimRight(string(line), "\r\n"), "truncated", err == bufio.ErrBufferFull)
		}
		cut = err == bufio.ErrBufferFull
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}

// headerTransport adds configured headers to every request.
type headerTransport struct {
	headers map[string]string
	next    http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	return h.next.RoundTrip(r)
}

// lost marks a session that ended and asks the supervisor to restart it.
func (c *Conn) lost(s *mcp.ClientSession) {
	c.mu.Lock()
	if c.session != s {
		c.mu.Unlock()
		return
	}
	c.session, c.raw = nil, nil
	c.down = errors.New("the session ended")
	c.back = make(chan struct{})
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return
	}
	c.log.Warn("upstream session ended; restarting")
	select {
	case c.restart <- struct{}{}:
	default:
	}
}

// supervise restarts the session each time it ends, with backoff.
func (c *Conn) supervise(ctx context.Context) {
	defer close(c.done)
	wait := c.minWait
	up := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.restart:
		}
		if time.Since(up) > stableAfter {
			wait = c.minWait
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			case <-c.nudge:
			}
			wait = min(2*wait, c.maxWait)
			err := c.connect(ctx)
			if err == nil {
				c.log.Info("upstream session restarted")
				up = time.Now()
				c.notifyChanged()
				break
			}
			c.mu.Lock()
			c.down = err
			c.mu.Unlock()
			c.log.Warn("upstream restart failed", "err", err, "next_in", wait)
		}
	}
}

// relist fetches the tool list again after the server said it changed.
func (c *Conn) relist() {
	s := c.current()
	if s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tools, err := listTools(ctx, s)
	if err != nil {
		c.log.Warn("upstream tools/list after list_changed failed", "err", err)
		return
	}
	c.mu.Lock()
	c.tools = tools
	c.mu.Unlock()
	c.notifyChanged()
}

func (c *Conn) notifyChanged() {
	if c.changed != nil {
		go c.changed()
	}
}

// current returns the live session, or nil.
func (c *Conn) current() *mcp.ClientSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// Name returns the server's name in the configuration.
func (c *Conn) Name() string { return c.srv.Name }

// Tools returns the tools of the last listing.
func (c *Conn) Tools() []*mcp.Tool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.tools)
}

// ErrDown is wrapped by Call's error when the server has no live session.
var ErrDown = errors.New("upstream server is down")

// Call runs tools/call with the exact argument bytes and the request's
// _meta (meta, nil for none) and returns the
// result as the JSON of an MCP CallToolResult. It fails when the server
// is down, the session breaks or ctx ends: the caller decides what that
// means. Only a call the session refused unsent, having ended, is made
// again, on the next session.
func (c *Conn) Call(ctx context.Context, tool string, args json.RawMessage, meta map[string]any) (json.RawMessage, error) {
	s, err := c.live(ctx)
	if err != nil {
		return nil, err
	}
	token, done := c.flights.start(ctx)
	defer done()
	params := &mcp.CallToolParams{Meta: c.forServer(meta, token), Name: tool, Arguments: args}
	for {
		out, err := c.callOn(ctx, s, params)
		if !errors.Is(err, errNotSent) {
			return out, err
		}
		// The session had ended before the call went out: wait for the
		// next one, as a call made while it restarts does.
		c.lost(s)
		if s, err = c.live(ctx); err != nil {
			return nil, err
		}
	}
}

// callOn makes the call on session s, on its raw connection where it
// has one the call can use.
func (c *Conn) callOn(ctx context.Context, s *mcp.ClientSession, params *mcp.CallToolParams) (json.RawMessage, error) {
	if raw := c.rawOf(s); raw != nil {
		out, err := c.callRaw(ctx, raw, params)
		if !errors.Is(err, errNotRaw) {
			return out, err
		}
	}
	return c.callSDK(ctx, s, params)
}

// rawOf returns the raw connection of session s; nil where the SDK makes
// the calls, or s is no longer the session.
func (c *Conn) rawOf(s *mcp.ClientSession) *rawConn {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.session != s {
		return nil
	}
	return c.raw
}

// callSDK makes a tools/call through the SDK's client session.
func (c *Conn) callSDK(ctx context.Context, s *mcp.ClientSession, params *mcp.CallToolParams) (json.RawMessage, error) {
	res, err := s.CallTool(ctx, params)
	if err == nil {
		// The progress and log messages the server sent before its
		// answer are relayed before it (order.go).
		c.httpOrder.await(ctx, c.httpOrder.mark())
	}
	if l, ok := ctx.Value(resultLimitKey{}).(*resultLimit); ok && err != nil && l.over.Load() {
		// The answer was cut (resultlimit.go), and the session with it:
		// the next call waits for a new one rather than take this one.
		c.lost(s)
		go s.Close()
	}
	var answered *jsonrpc.Error
	switch {
	case err == nil:
	case errors.Is(err, mcp.ErrConnectionClosed):
		// The SDK refused to send on a session that had ended (its
		// in-flight calls fail with the read's error instead).
		return nil, fmt.Errorf("%w: %w", errNotSent, err)
	case notSent(err):
		// custody had no token it could send: the tool did not run.
		return nil, fmt.Errorf("upstream %q: tools/call %s: %w: %w", c.srv.Name, params.Name, ErrDown, err)
	case errors.As(err, &answered) || ctx.Err() != nil:
		// The server answered with an error, or the caller gave up: the
		// gateway knows what that means.
		return nil, fmt.Errorf("upstream %q: tools/call %s: %w", c.srv.Name, params.Name, err)
	default:
		// The request went out and the session broke before an answer
		// came (a crash, garbage on stdout): it may have run.
		return nil, fmt.Errorf("upstream %q: tools/call %s: %w: %w", c.srv.Name, params.Name, gate.ErrOutcomeUnknown, err)
	}
	out, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("upstream %q: tools/call %s: encode result: %w", c.srv.Name, params.Name, err)
	}
	return out, nil
}

// Close ends the session and, for a stdio server, the process.
func (c *Conn) Close() error {
	c.mu.Lock()
	c.closed = true
	s := c.session
	c.session, c.raw = nil, nil
	c.wake()
	c.mu.Unlock()
	c.stop()
	<-c.done
	c.cred.close()
	if s != nil {
		return s.Close()
	}
	return nil
}

// wake lets the calls waiting for a session go on. Called with c.mu held.
func (c *Conn) wake() {
	if c.back != nil {
		close(c.back)
		c.back = nil
	}
}

// live returns the live session, waiting for a session that is down to
// be back until ctx ends; the error then wraps ErrDown and says why it is
// down.
func (c *Conn) live(ctx context.Context) (*mcp.ClientSession, error) {
	for {
		c.mu.Lock()
		s, back, down, closed := c.session, c.back, c.down, c.closed
		c.mu.Unlock()
		switch {
		case s != nil:
			return s, nil
		case closed || back == nil:
			return nil, fmt.Errorf("upstream %q: %w: %v", c.srv.Name, ErrDown, down)
		}
		select {
		case <-back:
		case <-ctx.Done():
			return nil, fmt.Errorf("upstream %q: %w: %v (waited for it to be back as long as the call may take)", c.srv.Name, ErrDown, down)
		}
	}
}
