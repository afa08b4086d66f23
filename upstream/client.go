//lint:file-ignore SA1019 roots, sampling and logging are deprecated by SEP-2577 and still relayed for the clients and servers that use them.
package upstream

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/downstream"
)

// What a server sends custody while it works (client.go): custody is the
// server's client, and passes on what is meant for the client a call
// came from.
//
//   - notifications/progress of a call go to the client that asked for
//     progress, under the token it chose (custody gives the server a
//     token of its own, since two clients may choose the same);
//   - notifications/message go to the clients whose calls are in flight
//     on the server, as the server's log (logger NAME, or NAME/LOGGER);
//     with none in flight, to ConnOptions.Log;
//   - the server's own requests of the client (sampling/createMessage,
//     elicitation/create, roots/list) are asked of the one client whose
//     call is in flight on the server, through ConnOptions.Ask, which
//     governs and records each. With none, or several, in flight the
//     server is answered with an error: custody never asks one agent's
//     user on another's behalf.
//
// Servers ask on protocol versions before 2026-07-28 (see askingVersion).
// custody declares to the server roots always, and sampling and
// elicitation only when the server's ClientFeatures allow them. The
// session is the server's for every client, so what is declared is what
// the policy allows; a request the client at hand did not declare is
// answered with an error.

// Client features a server may be allowed to use (Server.ClientFeatures).
const (
	FeatureSampling    = "sampling"
	FeatureElicitation = "elicitation"
	FeatureRoots       = "roots"
)

// AskFunc governs and records one request of the server to the client a
// call came from: do asks it, caller is nil when there is no one to ask.
type AskFunc func(ctx context.Context, server, feature string, params any, caller *downstream.Caller,
	do func(ctx context.Context) (any, error)) (any, error)

// flight is one call in flight on a server, by a client.
type flight struct {
	ctx    context.Context
	caller *downstream.Caller
	// token is the progress token custody gave the server; "" when the
	// client asked for no progress.
	token string
	// ended says the call has its answer: the flight lingers a moment
	// (lingerAfter) for what the server sent before the answer and the
	// SDK hands custody after it, but is no one to ask anything.
	ended bool
}

// lingerAfter is how long a call's flight stays after its answer. The
// SDK passes a server's notifications to custody on a goroutine of their
// own, and responses at once: the log messages and progress a server
// sent just before answering may come after the answer, and are still
// the caller's.
const lingerAfter = 5 * time.Second

// flights are the calls in flight on one server.
type flights struct {
	mu sync.Mutex
	m  map[*flight]bool
}

// start registers the call of ctx, when a client made it, and returns
// the progress token to give the server ("" for none) and the func that
// ends it.
func (f *flights) start(ctx context.Context) (token string, done func()) {
	caller, ok := downstream.From(ctx)
	if !ok {
		return "", func() {}
	}
	fl := &flight{ctx: ctx, caller: caller}
	if caller.ProgressToken != nil {
		fl.token = "custody-" + rand.Text()
	}
	f.mu.Lock()
	if f.m == nil {
		f.m = map[*flight]bool{}
	}
	f.m[fl] = true
	f.mu.Unlock()
	return fl.token, func() {
		f.mu.Lock()
		fl.ended = true
		f.mu.Unlock()
		time.AfterFunc(lingerAfter, func() {
			f.mu.Lock()
			delete(f.m, fl)
			f.mu.Unlock()
		})
	}
}

// byToken returns the flight custody gave token.
func (f *flights) byToken(token any) *flight {
	t, ok := token.(string)
	if !ok || t == "" {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for fl := range f.m {
		if fl.token == t {
			return fl
		}
	}
	return nil
}

// all returns the flights, one a client session; with active, only the
// calls that have no answer yet. Of a session's flights, one still in
// flight is chosen over one that lingers after its answer: what is sent
// to a call's request goes on its event stream, which closes with the
// answer.
func (f *flights) all(active bool) []*flight {
	f.mu.Lock()
	defer f.mu.Unlock()
	at := map[*mcp.ServerSession]int{}
	var out []*flight
	for fl := range f.m {
		if active && fl.ended {
			continue
		}
		i, seen := at[fl.caller.Session]
		switch {
		case !seen:
			at[fl.caller.Session] = len(out)
			out = append(out, fl)
		case out[i].ended && !fl.ended:
			out[i] = fl
		}
	}
	return out
}

// hopMeta is the prefix of the _meta keys of one hop's protocol
// (protocol version, client info and capabilities, log level, from
// 2026-07-28): custody's session with the server has its own.
const hopMeta = "io.modelcontextprotocol/"

// withToken returns meta for the server: without the keys of the
// client's hop, and the client's progress token replaced by custody's
// (token, or none).
func withToken(meta map[string]any, token string) map[string]any {
	if len(meta) == 0 && token == "" {
		return nil
	}
	out := make(map[string]any, len(meta)+1)
	for k, v := range meta {
		if k != "progressToken" && !strings.HasPrefix(k, hopMeta) {
			out[k] = v
		}
	}
	if token != "" {
		out["progressToken"] = token
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// callerMeta is the _meta of the client's request for the server: the
// client's own keys, less custody's and with custody's progress token.
func (c *Conn) callerMeta(ctx context.Context, token string) mcp.Meta {
	var meta map[string]any
	if caller, ok := downstream.From(ctx); ok {
		meta = caller.Meta
	}
	return c.forServer(custody.ForeignMeta(meta), token)
}

// hopLogLevel is the _meta key of a request's log level (from protocol
// 2026-07-28, which keeps no level per session).
const hopLogLevel = hopMeta + "logLevel"

// forServer is withToken with the log level the client wants: the one
// its request names, else the last it set (logging/setLevel), so that a
// server on 2026-07-28 logs at it too.
func (c *Conn) forServer(meta map[string]any, token string) map[string]any {
	level, _ := meta[hopLogLevel].(string)
	out := withToken(meta, token)
	if level == "" {
		c.mu.Lock()
		level = string(c.level)
		c.mu.Unlock()
	}
	if level == "" {
		return out
	}
	if out == nil {
		out = map[string]any{}
	}
	out[hopLogLevel] = level
	return out
}

// clientOptions are the handlers of what the server sends custody
// unasked, and the client capabilities custody declares.
func (c *Conn) clientOptions() *mcp.ClientOptions {
	opts := &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			go c.relist()
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			go c.relistFeatures()
		},
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			go c.relistFeatures()
		},
		ResourceUpdatedHandler:      c.resourceUpdated,
		ProgressNotificationHandler: c.progress,
		LoggingMessageHandler:       c.logMessage,
	}
	// The requests themselves are answered by askMiddleware, also when
	// not declared: a server that asks all the same is refused on the
	// ledger.
	if c.srv.allows(FeatureSampling) {
		opts.Capabilities.Sampling = &mcp.SamplingCapabilities{}
	}
	if c.srv.allows(FeatureElicitation) {
		opts.Capabilities.Elicitation = &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}
	}
	return opts
}

// allows reports whether the server may use a client feature: roots
// always, sampling and elicitation when ClientFeatures name them.
func (s Server) allows(feature string) bool {
	if feature == FeatureRoots {
		return true
	}
	for _, f := range s.ClientFeatures {
		if f == feature {
			return true
		}
	}
	return false
}

// progress passes a progress notification to the client whose call it
// is about, under the client's token; one about no call in flight is
// dropped.
func (c *Conn) progress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	defer c.relayed(req.Session)
	fl := c.flights.byToken(req.Params.ProgressToken)
	if fl == nil {
		c.log.Debug("upstream progress for no call in flight", "token", req.Params.ProgressToken)
		return
	}
	p := *req.Params
	p.ProgressToken, p.Meta = fl.caller.ProgressToken, withoutCustodyMeta(p.Meta)
	if err := fl.caller.Session.NotifyProgress(fl.ctx, &p); err != nil {
		c.log.Debug("relay progress", "err", err)
	}
}

// logMessage passes a log message of the server to the clients whose
// calls are in flight on it, or to ConnOptions.Log.
func (c *Conn) logMessage(ctx context.Context, req *mcp.LoggingMessageRequest) {
	defer c.relayed(req.Session)
	p := *req.Params
	p.Logger, p.Meta = c.loggerName(p.Logger), withoutCustodyMeta(p.Meta)
	list := c.flights.all(false)
	if len(list) == 0 {
		if c.logTo != nil {
			c.logTo(ctx, &p)
		}
		return
	}
	for _, fl := range list {
		if err := fl.caller.Session.Log(fl.ctx, &p); err != nil {
			c.log.Debug("relay log message", "err", err)
		}
	}
}

// relayed counts a notification of session s relayed, for the answers
// read after it on custody's own connection or an event stream
// (order.go).
func (c *Conn) relayed(s *mcp.ClientSession) {
	if raw := c.rawOf(s); raw != nil {
		raw.order.noteRelayed()
		return
	}
	c.httpOrder.noteRelayed()
}

// loggerName names the server as the logger of its messages.
func (c *Conn) loggerName(logger string) string {
	if logger == "" {
		return c.srv.Name
	}
	return c.srv.Name + "/" + logger
}

// sole returns the one call in flight on the server: the client to ask.
func (c *Conn) sole() (*flight, error) {
	list := c.flights.all(true)
	switch len(list) {
	case 0:
		return nil, fmt.Errorf("no call of server %q is in flight: there is no client to ask", c.srv.Name)
	case 1:
		return list[0], nil
	}
	return nil, fmt.Errorf("calls of %d clients are in flight on server %q: custody cannot tell which to ask", len(list), c.srv.Name)
}

// ask governs and records one request of the server to the client.
func (c *Conn) ask(ctx context.Context, feature string, params any, do func(ctx context.Context, s *mcp.ServerSession) (any, error)) (any, error) {
	fl, whyNot := c.sole()
	var caller *downstream.Caller
	callCtx := ctx
	if fl != nil {
		caller, callCtx = fl.caller, fl.ctx
	}
	if c.askFn == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "custody relays no requests of this server"}
	}
	out, err := c.askFn(ctx, c.srv.Name, feature, params, caller, func(ctx context.Context) (any, error) {
		if fl == nil {
			return nil, whyNot
		}
		return do(mergeDone(callCtx, ctx), caller.Session)
	})
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	return out, nil
}

// mergeDone returns a context with values of base (the call's, which the
// door routes by) that ends when either ends.
func mergeDone(base, other context.Context) context.Context {
	ctx, cancel := context.WithCancel(base)
	context.AfterFunc(other, cancel)
	return ctx
}

// askMiddleware answers the server's requests of the client by asking
// the client whose call is in flight (ask), never from the SDK's own
// handlers.
func (c *Conn) askMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		var feature string
		var do func(ctx context.Context, s *mcp.ServerSession) (any, error)
		switch p := req.GetParams().(type) {
		case *mcp.CreateMessageParams:
			feature = FeatureSampling
			do = func(ctx context.Context, s *mcp.ServerSession) (any, error) { return s.CreateMessage(ctx, p) }
		case *mcp.CreateMessageWithToolsParams:
			feature = FeatureSampling
			do = func(ctx context.Context, s *mcp.ServerSession) (any, error) { return s.CreateMessageWithTools(ctx, p) }
		case *mcp.ElicitParams:
			feature = FeatureElicitation
			do = func(ctx context.Context, s *mcp.ServerSession) (any, error) { return s.Elicit(ctx, p) }
		case *mcp.ListRootsParams:
			feature = FeatureRoots
			do = func(ctx context.Context, s *mcp.ServerSession) (any, error) { return s.ListRoots(ctx, p) }
		default:
			return next(ctx, method, req)
		}
		out, err := c.ask(ctx, feature, req.GetParams(), do)
		if err != nil {
			return nil, err
		}
		return out.(mcp.Result), nil
	}
}

// logIdle passes a log message of a server without a call in flight to
// the relay's listeners (Relay.OnLog).
func (s *Set) logIdle(ctx context.Context, p *mcp.LoggingMessageParams) {
	s.mu.Lock()
	ls := slices.Clone(s.logListeners)
	s.mu.Unlock()
	for _, f := range ls {
		f(ctx, p)
	}
}

// OnLog registers f to be told (on the notification's goroutine) the log
// messages of servers that no call in flight is told of, their logger
// naming the server.
func (r *Relay) OnLog(f func(ctx context.Context, p *mcp.LoggingMessageParams)) {
	r.set.mu.Lock()
	defer r.set.mu.Unlock()
	r.set.logListeners = append(r.set.logListeners, f)
}

// SetLevel asks every server that declares logging to send log messages
// of level and above (a client's logging/setLevel). Servers that fail
// are named in the error; the others have the level.
func (r *Relay) SetLevel(ctx context.Context, level mcp.LoggingLevel) error {
	var errs []error
	for _, c := range r.set.conns {
		if err := c.SetLevel(ctx, level); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// SetLevel runs logging/setLevel on the server, when it declares
// logging, and again on each session after a restart.
func (c *Conn) SetLevel(ctx context.Context, level mcp.LoggingLevel) error {
	c.mu.Lock()
	c.level = level
	c.mu.Unlock()
	s, err := c.live(ctx)
	if err != nil {
		return err
	}
	return c.setLevel(ctx, s, level)
}

func (c *Conn) setLevel(ctx context.Context, s *mcp.ClientSession, level mcp.LoggingLevel) error {
	if r := s.InitializeResult(); r == nil || r.Capabilities == nil || r.Capabilities.Logging == nil {
		return nil
	}
	if err := s.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
		return fmt.Errorf("upstream %q: logging/setLevel: %w", c.srv.Name, err)
	}
	return nil
}

// restoreLevel sets on a new session the level a client set before.
func (c *Conn) restoreLevel(ctx context.Context, s *mcp.ClientSession) {
	c.mu.Lock()
	level := c.level
	c.mu.Unlock()
	if level == "" {
		return
	}
	if err := c.setLevel(ctx, s, level); err != nil {
		c.log.Warn("upstream logging level not restored", "level", level, "err", err)
	}
}

// askingVersion is the protocol version custody offers a server allowed
// sampling or elicitation: from 2026-07-28 a server may not send a
// request while it serves one (multi round-trip input requests, SEP-2322,
// replace them), and custody does not relay those yet.
const askingVersion = "2025-11-25"

// sessionOptions are the options of a session with the server: the
// latest protocol version, or askingVersion for a server that may ask.
func (c *Conn) sessionOptions() *mcp.ClientSessionOptions {
	if c.srv.allows(FeatureSampling) || c.srv.allows(FeatureElicitation) {
		return &mcp.ClientSessionOptions{ProtocolVersion: askingVersion}
	}
	return nil
}

// logMessage and logLevel name the SDK's log message and level, which
// SEP-2577 deprecates and custody still relays.
type (
	logMessage = mcp.LoggingMessageParams
	logLevel   = mcp.LoggingLevel
)
