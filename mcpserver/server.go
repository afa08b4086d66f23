// Package mcpserver is the MCP front door of custody, built on the official
// Go SDK. It lists the envelope's tools with their contracts as input and
// output schemas and sends every tools/call through gate.Gateway.Call with
// the exact argument bytes the client sent.
//
// The SDK is used on its low-level path (Server.AddTool with a raw
// handler), which neither validates nor defaults arguments: the gateway
// alone judges a call, so a call that does not validate is refused, never
// stripped, coerced or defaulted. Calls of tools outside the envelope are
// routed to the gateway too, so that their refusal is on the ledger like
// any other.
//
// Over streamable HTTP (HTTPHandler) custody's door stands in front of
// the SDK: it checks Origin and the bearer token, refuses bodies that are
// not strict JSON, caps and expires sessions, and answers a plain
// tools/call on an established session itself, with the same handler.
//
// With Options.Relay both doors also serve the upstreams' governed
// resources, resource templates and prompts (relay.go): resources/list,
// resources/templates/list, resources/read, resources/subscribe,
// prompts/list, prompts/get and completion/complete are answered by the
// relay, each read, get, completion and subscription through its
// gateway, and a refusal is JSON-RPC error ErrorCode carrying its
// detail.
package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/tlog"
)

// Options configures a Server. Every field is optional.
type Options struct {
	// Version is reported to clients; "dev" when empty.
	Version string
	// Actor is recorded as the caller of calls that carry no authenticated
	// identity (the stdio transport); "mcp-stdio" when empty.
	Actor string
	// Challenge, when set, is the WWW-Authenticate value of a 401 from
	// /mcp refusing err (with RFC 9728's resource_metadata); plain Bearer
	// when nil.
	Challenge func(err error) string
	// Observe is told of every call's tool, outcome ("ok" or an error
	// kind) and duration, for metrics.
	Observe func(tool, outcome string, d time.Duration)
	// Inclusion returns the proof that entry seq is in the latest signed
	// checkpoint (ENOTFOUND while none covers it), for a call whose _meta
	// sets ProofMeta; nil leaves the flag unanswered.
	Inclusion func(ctx context.Context, seq uint64) (tlog.Receipt, error)
	Logger    *slog.Logger

	// SessionIdleTimeout closes an HTTP session that has had no request
	// for this long; DefaultSessionIdleTimeout when zero or less.
	SessionIdleTimeout time.Duration
	// AfterFunc starts the timers that close idle HTTP sessions;
	// time.AfterFunc when nil. A test passes a fake clock's, so that a
	// session idles for as long as the test moves that clock.
	AfterFunc func(d time.Duration, f func()) IdleTimer
	// MaxSessionsPerAgent caps the HTTP sessions one agent holds open;
	// DefaultMaxSessionsPerAgent when zero or less. A new session beyond
	// the cap evicts the agent's least recently active idle session.
	MaxSessionsPerAgent int
	// AllowedOrigins are the browser origins ("https://app.example.com")
	// that may call the HTTP door besides the server's own.
	AllowedOrigins []string
	// Relay serves the upstreams' governed resources and prompts (see
	// relay.go); none are offered when nil.
	Relay Relay
	// ConsoleURL is the operator console's base URL; a held call's text
	// then links the page where an operator decides it.
	ConsoleURL string
	// DataDir is the data directory to name in the CLI command that
	// decides a held call; none when empty (the default directory).
	DataDir string
	// MaxApprovalWait caps how long a held call waits for its decision
	// (a tool's approvalWait, see wait.go): the HTTP server's write
	// timeout, less a margin for the run and the answer. No cap when zero.
	MaxApprovalWait time.Duration
}

// Server is an MCP server whose tools are a gateway's envelope.
type Server struct {
	srv  *mcp.Server
	opts Options
	log  *slog.Logger
	// caps are the capabilities the server declares, which Update keeps.
	caps *mcp.ServerCapabilities

	// mu guards what Update replaces: the gateway, the relay and
	// structured, which says, per tool, whether refusals may carry
	// structured content: only tools without an output schema, since
	// clients check structured content against the output schema even
	// on errors.
	mu         sync.RWMutex
	gw         *gate.Gateway
	relayTo    Relay
	structured map[string]bool
	// stdioTrace is the trace of calls on a transport without session
	// ids: one per server, as custody mcp --stdio serves one session.
	stdioTrace string
	// sessions keeps every agent's HTTP sessions under its cap.
	sessions *sessions
	// inflight are the calls the HTTP door answers itself, by request.
	inflight *inflight
}

// New returns an MCP server offering gw's tools, with input and output
// schemas bundled from reg. It fails when a tool's contract cannot be
// bundled or its input is not an object schema.
func New(gw *gate.Gateway, reg *contract.Registry, opts Options) (*Server, error) {
	if gw == nil || reg == nil {
		return nil, errors.New("mcpserver: a gateway and a contract registry are required")
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.Actor == "" {
		opts.Actor = "mcp-stdio"
	}
	if opts.SessionIdleTimeout <= 0 {
		opts.SessionIdleTimeout = DefaultSessionIdleTimeout
	}
	if opts.MaxSessionsPerAgent <= 0 {
		opts.MaxSessionsPerAgent = DefaultMaxSessionsPerAgent
	}
	if opts.AfterFunc == nil {
		opts.AfterFunc = afterFunc
	}
	s := &Server{gw: gw, relayTo: opts.Relay, opts: opts, log: opts.Logger, structured: map[string]bool{}, stdioTrace: "mcp-" + rand.Text(),
		sessions: newSessions(opts.MaxSessionsPerAgent, opts.SessionIdleTimeout, opts.AfterFunc), inflight: newInflight()}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	sub, unsub := s.subscribeHandlers()
	s.caps = relayCapabilities(opts.Relay)
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "custody", Title: "custody gateway", Version: opts.Version},
		&mcp.ServerOptions{Logger: opts.Logger, Instructions: instructions, Capabilities: s.caps,
			SubscribeHandler: sub, UnsubscribeHandler: unsub})
	if opts.Relay != nil {
		// The relay's listeners are its upstreams', whichever relay
		// Update puts in its place: they are registered once.
		s.relayUpdates(opts.Relay)
		s.relayListChanges(opts.Relay, s.caps)
		s.relayLogs(opts.Relay)
	}
	tools, structured, err := mcpTools(gw, reg)
	if err != nil {
		return nil, err
	}
	s.structured = structured
	for _, t := range tools {
		s.srv.AddTool(t, s.callTool)
	}
	s.srv.AddReceivingMiddleware(s.sessions.limit, s.relayFeatures, s.routeUnknownTools, s.filterTools)
	return s, nil
}

// mcpTools describes gw's tools for tools/list, with whether each may
// carry structured refusals.
func mcpTools(gw *gate.Gateway, reg *contract.Registry) ([]*mcp.Tool, map[string]bool, error) {
	var tools []*mcp.Tool
	structured := map[string]bool{}
	for _, spec := range gw.Tools() {
		gt, _ := gw.Tool(spec.Name)
		t, err := mcpTool(reg, spec, gt.Published)
		if err != nil {
			return nil, nil, fmt.Errorf("mcpserver: tool %q: %w", spec.Name, err)
		}
		structured[spec.Name] = t.OutputSchema == nil
		tools = append(tools, t)
	}
	return tools, structured, nil
}

// Update serves gw's tools, with input and output schemas bundled from
// reg, and relay, in place of what the server served: the sessions open
// stay open (their agents' traces with them) and are told that the tool
// list changed. It answers false, having changed nothing, when relay
// would need capabilities other than those the sessions were told at
// their initialize, or the relay appears or goes: a new Server must then
// be built. A tool whose contract cannot be bundled fails it, with
// nothing changed.
func (s *Server) Update(gw *gate.Gateway, reg *contract.Registry, relay Relay) (bool, error) {
	if gw == nil || reg == nil {
		return false, errors.New("mcpserver: a gateway and a contract registry are required")
	}
	if (relay == nil) != (s.relay() == nil) || !reflect.DeepEqual(relayCapabilities(relay), s.caps) {
		return false, nil
	}
	tools, structured, err := mcpTools(gw, reg)
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	var gone []string
	for name := range s.structured {
		if _, ok := structured[name]; !ok {
			gone = append(gone, name)
		}
	}
	s.gw, s.relayTo, s.structured = gw, relay, structured
	s.mu.Unlock()
	if len(gone) > 0 {
		s.srv.RemoveTools(gone...)
	}
	for _, t := range tools {
		s.srv.AddTool(t, s.callTool)
	}
	return true, nil
}

// gateway is the gateway the calls go to now.
func (s *Server) gateway() *gate.Gateway {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.gw
}

// relay is the relay of resources and prompts now; nil without one.
func (s *Server) relay() Relay {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.relayTo
}

// instructions tell a client how the gateway behaves.
const instructions = "Every tool call passes a contract-enforcing gateway. Arguments that do not match " +
	"the tool's input schema are refused, never repaired: fix them and call again. A call that " +
	"needs human approval returns pending_approval with an approval_request_id: wait for an operator's " +
	"decision, then repeat the same call with exactly the same arguments."

// MCP returns the underlying SDK server, to run on any transport.
func (s *Server) MCP() *mcp.Server { return s.srv }

// ServeStdio serves one MCP session over newline-delimited JSON-RPC on in
// and out (custody mcp --stdio) until the client disconnects or ctx ends.
// Calls are recorded with Options.Actor as their actor.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	err := s.srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}})
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		return fmt.Errorf("serve mcp over stdio: %w", err)
	}
	return nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// mcpTool describes one envelope tool for tools/list. A tool that
// publishes schemas of its own (an upstream tool) is described with them.
func mcpTool(reg *contract.Registry, spec custody.ToolSpec, pub *gate.Published) (*mcp.Tool, error) {
	if pub != nil {
		return publishedTool(spec, pub)
	}
	in, err := reg.Bundle(spec.Input)
	if err != nil {
		return nil, fmt.Errorf("bundle input schema %q: %w", spec.Input, err)
	}
	if in, err = objectSchema(in); err != nil {
		return nil, fmt.Errorf("input schema %q: %w", spec.Input, err)
	}
	t := &mcp.Tool{
		Name: spec.Name, Description: spec.Description, InputSchema: in,
		Annotations: annotations(spec),
	}
	out, err := reg.Bundle(spec.Output)
	if err != nil {
		return nil, fmt.Errorf("bundle output schema %q: %w", spec.Output, err)
	}
	if schemaType(out) == "object" {
		// Structured content must be an object for most clients: only
		// object outputs are declared.
		t.OutputSchema = out
	}
	return t, nil
}

// publishedTool describes a tool with the schemas it publishes. A tool
// an MCP server declared keeps its declaration intact (title,
// annotations, icons, _meta), but for the name custody exposes it under,
// its schemas as custody enforces them, and the _meta keys under
// "custody/", which only custody speaks for: the server's are dropped
// and custody's facts put in their place.
func publishedTool(spec custody.ToolSpec, pub *gate.Published) (*mcp.Tool, error) {
	in, err := objectSchema(pub.Input)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	t := &mcp.Tool{Name: spec.Name, Description: spec.Description, Annotations: annotations(spec)}
	if pub.Declared != nil {
		t = &mcp.Tool{}
		if err := json.Unmarshal(pub.Declared, t); err != nil {
			return nil, fmt.Errorf("the declared tool: %w", err)
		}
		t.Name, t.Meta = spec.Name, custodyMeta(t.Meta, spec)
	}
	t.InputSchema, t.OutputSchema = in, nil
	if pub.Output != nil && schemaType(pub.Output) == "object" {
		t.OutputSchema = pub.Output
	}
	return t, nil
}

// MetaPrefix begins the _meta keys custody speaks under. A key under it
// that comes from anyone else (an upstream, a client) is dropped.
const MetaPrefix = custody.MetaPrefix

// custodyMeta returns meta without the keys under MetaPrefix, with
// custody's facts about the tool under "custody/policy": what the
// envelope declares of it, which is what custody enforces.
func custodyMeta(meta mcp.Meta, spec custody.ToolSpec) mcp.Meta {
	out := custody.ForeignMeta(meta)
	if out == nil {
		out = mcp.Meta{}
	}
	out[MetaPrefix+"policy"] = map[string]any{
		"access": spec.Access, "effect": spec.Effect, "approval": spec.Approval,
	}
	return out
}

// annotations derive the MCP hints from the envelope's declarations.
func annotations(spec custody.ToolSpec) *mcp.ToolAnnotations {
	destructive := spec.Effect == custody.EffectConsequential
	return &mcp.ToolAnnotations{
		Title:           spec.Name,
		ReadOnlyHint:    spec.Access == custody.Read,
		DestructiveHint: &destructive,
	}
}

// objectSchema returns schema with "type":"object" at its root. MCP tool
// arguments are always an object, so a schema without a root type gains
// one; a schema whose root type is something else cannot be offered.
func objectSchema(schema json.RawMessage) (json.RawMessage, error) {
	switch schemaType(schema) {
	case "object":
		return schema, nil
	case "":
		var m map[string]json.RawMessage
		if err := json.Unmarshal(schema, &m); err != nil {
			return nil, fmt.Errorf("not a JSON object: %w", err)
		}
		m["type"] = json.RawMessage(`"object"`)
		return json.Marshal(m)
	default:
		return nil, errors.New(`the root type must be "object" for MCP tool arguments`)
	}
}

// schemaType returns the root "type" of a schema when it is one string,
// "" when absent, and "?" for anything else.
func schemaType(schema json.RawMessage) string {
	var s struct {
		Type json.RawMessage `json:"type"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return "?"
	}
	if s.Type == nil {
		return ""
	}
	var t string
	if json.Unmarshal(s.Type, &t) != nil {
		return "?"
	}
	return t
}
