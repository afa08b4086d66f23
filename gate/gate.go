// Package gate is the chokepoint of custody: every tool call of an agent
// goes through Gateway.Call, which runs eight steps in order and stops at
// the first refusal:
//
//  1. decode:   size cap, strict JSON (UTF-8, no duplicate keys, integers
//     within ±2^53), trace id; the tool is in the envelope and the trace
//     has not used the tool's refusals-per-trace budget
//  2. contract: the exact argument bytes against the tool's input schema
//  3. policy:   the tool is in the envelope, its CEL conditions
//     (conditions.go), its rate limits (rate.go), the calls-per-trace
//     budget, the resource scope and the custody links
//  4. approval: HUMAN_CONFIRMATION tools need an approved, unexpired,
//     unused approval bound to the action's digest
//  5. intent:   WRITE tools (and approved actions) get a call.started
//     entry on the ledger before the side effect
//  6. run:      the handler under a deadline
//  7. contract: the output against the tool's output schema
//  8. record:   the outcome entry; the result is released only once it is
//     durable
//
// Every outcome, refusals included, is exactly one ledger entry holding
// the exact argument bytes. If the ledger cannot be written the call fails
// and, before the intent entry, the handler never runs.
//
// # Resource scope
//
// A tool whose ToolSpec.Scope is "trace:" followed by a JSON pointer (for
// example "trace:/patient_id") names, with the argument at that pointer, a
// resource that only one trace may touch. The first trace whose call
// passes the contract with a given value binds the resource to itself (in
// the StateStore, namespace "scope", key "<argument name>/<value>"); a
// call from any other trace naming the same resource is refused. A bare
// "trace" scope, which names no argument, is refused when the gateway is
// built. Any other scope is a label that the gateway records but does not
// enforce.
//
// # Approvals
//
// The digest of a HUMAN_CONFIRMATION action covers the tool name and the
// arguments without the members that name the approval (the top-level
// arguments of the tool's approval links), so a call can cite the approval
// that authorises it. A call that names no approval uses an approval its
// agent asked for in any of its traces (a client that restarts starts a
// new one), bound to the same digest; without one a request is created
// (or the pending one reported) and the call is refused with
// pending_approval. An approval authorises only the agent that requested
// it (Call.Actor, recorded on the approval.requested entry): another agent
// citing it, or naming its trace, is denied. The approval is used in the
// same commit as the call's call.started entry, so a call that loses the
// race for it leaves only its refusal on the ledger.
//
// # State
//
// What the policy reads is state committed with the entry that justifies
// it: a calls-per-trace budget counts the calls that ran, with the call's
// first entry after the policy let it go on (call.started, or the outcome
// of a READ call), within the budget when that entry lets the call go on;
// a ref that a custody link checks is recorded with the call.succeeded
// entry of the call that produced it (namespace "ref"). Under concurrent
// calls of one trace a READ tool with a budget may run past it; its
// output is then withheld and the call refused.
//
// Refused calls count against a separate refusals-per-trace budget
// (ToolSpec.MaxRefusalsPerTrace, DefaultMaxRefusalsPerTrace for a tool
// with a calls budget), with their call.refused entry (namespace
// "refusals"): a trace that has used it is denied every further call of
// the tool, saying so, so that probing stops while one malformed call does
// not lock a trace out of the calls it may make; but an operator's
// approval of exactly the call still lets it run: the budget stops
// probing, never a human's decision. A refusal that only
// reports an approval already waiting, and a failure of custody itself
// (unavailable, internal), do not count. The count is read before the
// call goes on, so concurrent calls of one trace may pass the refusal
// budget by as many as run at once.
package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/contract"
)

// Defaults for Config.
const (
	DefaultDeadline    = 10 * time.Second
	DefaultMaxArgBytes = 1 << 20
	// DefaultMaxRefusalsPerTrace is the refusal budget of a tool with a
	// calls-per-trace budget that declares none of its own.
	DefaultMaxRefusalsPerTrace = 10
)

// State namespaces the gateway writes.
const (
	nsBudget = "budget"
	// nsRefusals counts the refused calls of a tool in a trace.
	nsRefusals   = "refusals"
	nsScope      = "scope"
	nsScopeClaim = "scope.claim"
	// nsRef holds the refs of successful calls that custody links check.
	nsRef = "ref"
)

// Handler runs a tool. call.Args are the exact bytes that passed the input
// contract. The output must match the tool's output contract. A returned
// *custody.Error keeps its kind (an internal one becomes unavailable) and
// its message reaches the agent; any other error is reported as the tool
// being unavailable and its text stays in the log and on the ledger.
type Handler func(ctx context.Context, call custody.Call) (json.RawMessage, error)

// Tool is a tool the gateway offers: its declaration and its implementation.
type Tool struct {
	Spec    custody.ToolSpec
	Handler Handler
	// Editable names top-level string arguments an operator may edit
	// before approving a HUMAN_CONFIRMATION call.
	Editable []string
	// Deadline bounds each run of this tool; the gateway's deadline when
	// zero.
	Deadline time.Duration
	// Admit, when set, may refuse a call at the policy step for a reason
	// of the tool's own (a tool definition in quarantine, say). A refusal
	// that is not a *custody.Error is denied with its text.
	Admit func(ctx context.Context) error
	// Refs, when set, returns refs recorded on every entry of a call of
	// the tool (the upstream that serves it, the definition it runs).
	Refs func() map[string]string
	// Published holds the schemas front doors publish for the tool when
	// they are not the bundles of Spec.Input and Spec.Output: an
	// upstream tool's own schemas, as its server declared them.
	Published *Published
	// MCPResult says the tool's output is an MCP CallToolResult
	// ({"content","structuredContent"?,"isError"?}), which the MCP front
	// door returns as it is.
	MCPResult bool
}

// Published are the input and output schemas of a tool as front doors
// show them. Output may be nil: the tool declares none.
type Published struct {
	Input  json.RawMessage
	Output json.RawMessage
	// Declared is the tool as its MCP server declared it (an MCP Tool
	// object: title, annotations, icons, _meta ...), the definition
	// custody pinned; nil for a tool no MCP server declared. The MCP
	// door describes the tool with it, intact, but for its name and
	// schemas and the _meta keys only custody may speak under.
	Declared json.RawMessage
}

// Config holds the gateway's dependencies. Registry, Ledger and Approvals
// are required; State is required when a tool has a budget, a trace scope
// or a custody link to a ref, and must be kept in the same store as the
// Ledger: the state a call changes is committed with its entry.
type Config struct {
	Registry  *contract.Registry
	Ledger    custody.Ledger
	Approvals *approval.Service
	State     custody.StateStore
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Deadline bounds each handler run; DefaultDeadline when zero.
	Deadline time.Duration
	// MaxArgBytes caps the argument size; DefaultMaxArgBytes when zero.
	MaxArgBytes int
	// Logger receives internal detail that never reaches an agent;
	// slog.Default() when nil.
	Logger *slog.Logger
	// Allowed, when set, says whether an agent (a call's Actor) may see
	// and call a tool; a tool it may not is denied as if outside the
	// envelope. Every agent may call every tool when nil.
	Allowed func(actor, tool string) bool
	// Tracer, when set, makes each call a span with a child span for
	// each stage (see SpanCall); nil turns tracing off at no cost.
	Tracer trace.Tracer
	// Groups, when set, returns the groups of an agent (a call's Actor),
	// which conditions see as agent.groups.
	Groups func(actor string) []string
}

// Gateway is the chokepoint. It is safe for concurrent use.
type Gateway struct {
	reg       *contract.Registry
	ledger    custody.Ledger
	approvals *approval.Service
	state     custody.StateStore
	now       func() time.Time
	deadline  time.Duration
	maxArgs   int
	log       *slog.Logger
	allowed   func(actor, tool string) bool
	groups    func(actor string) []string
	tracer    trace.Tracer
	envelope  string
	tools     map[string]*tool
	order     []string
	// approvalMu serialises finding and requesting approvals, so that
	// concurrent calls of one action share one request.
	approvalMu sync.Mutex
	// grantSchemas holds the compiled schema of each grant by id.
	grantSchemas sync.Map
	// tally keeps the per-trace counters the pre-checks read.
	tally *tally
	// linked holds the refs some custody link checks, as refKey's tool
	// and ref ("" tool: a link that takes any tool's), so that only they
	// are recorded as state.
	linked map[[2]string]bool
}

// tool is a Tool with its declarations parsed once.
type tool struct {
	Tool
	// scopeArg is the JSON pointer of the argument naming a trace-scoped
	// resource; "" when the tool is not trace scoped.
	scopeArg string
	// scopeName is the last token of scopeArg: the resource kind.
	scopeName string
	// approvalArgs are the top-level argument names of approval links.
	approvalArgs []string
	// intent says the call gets a call.started entry before it runs.
	intent bool
	// refLinks says the tool has a custody link to a ref.
	refLinks bool
	// maxRefusals is the tool's refusal budget per trace; 0 is none.
	maxRefusals int
	// rules are the tool's compiled conditions; nil when it has none.
	rules *rules
}

// New builds a gateway offering tools, in that order, as the envelope
// whose id is envelope. It fails closed: a missing registry, ledger or
// approval service, a tool whose schemas do not resolve, a policy value
// it does not know or cannot enforce is an error naming it.
func New(cfg Config, envelope string, tools []Tool) (*Gateway, error) {
	if err := checkConfig(cfg); err != nil {
		return nil, err
	}
	g := &Gateway{
		reg: cfg.Registry, ledger: cfg.Ledger, approvals: cfg.Approvals, state: cfg.State,
		now: cfg.Now, deadline: cfg.Deadline, maxArgs: cfg.MaxArgBytes, log: cfg.Logger, allowed: cfg.Allowed, tracer: cfg.Tracer, groups: cfg.Groups,
		envelope: envelope, tools: make(map[string]*tool, len(tools)),
	}
	if g.now == nil {
		g.now = time.Now
	}
	g.tally = newTally(g.now)
	if g.deadline <= 0 {
		g.deadline = DefaultDeadline
	}
	if g.maxArgs <= 0 {
		g.maxArgs = DefaultMaxArgBytes
	}
	if g.log == nil {
		g.log = slog.Default()
	}
	for _, t := range tools {
		ct, err := g.compile(t)
		if err != nil {
			return nil, fmt.Errorf("gate: envelope %q: tool %q: %w", envelope, t.Spec.Name, err)
		}
		if _, dup := g.tools[t.Spec.Name]; dup {
			return nil, fmt.Errorf("gate: envelope %q: tool %q is declared twice", envelope, t.Spec.Name)
		}
		g.tools[t.Spec.Name] = ct
		g.order = append(g.order, t.Spec.Name)
	}
	g.linked = linkedRefs(tools)
	return g, nil
}

// checkConfig refuses a configuration missing a required dependency.
func checkConfig(cfg Config) error {
	switch {
	case cfg.Registry == nil:
		return errors.New("gate: no contract registry")
	case cfg.Ledger == nil:
		return errors.New("gate: no evidence ledger")
	case cfg.Approvals == nil:
		return errors.New("gate: no approval service")
	}
	return nil
}

// compile checks one tool's declaration and parses its policy.
func (g *Gateway) compile(t Tool) (*tool, error) {
	s := t.Spec
	if err := checkSpec(s, t.Handler); err != nil {
		return nil, err
	}
	if err := checkApprovers(s.Approvers); err != nil {
		return nil, err
	}
	for _, ref := range []string{s.Input, s.Output, s.ArgumentsPolicy, s.OutputPolicy} {
		if ref == "" {
			continue
		}
		if _, err := g.reg.Resolve(ref); err != nil {
			return nil, fmt.Errorf("schema %q: %w", ref, err)
		}
		if err := g.compileCheck(ref); err != nil {
			return nil, fmt.Errorf("schema %q: %w", ref, err)
		}
	}
	ct := &tool{Tool: t, intent: s.Access == custody.Write || s.Approval == custody.HumanConfirmation}
	if err := ct.parseScope(); err != nil {
		return nil, err
	}
	if err := ct.parseLinks(); err != nil {
		return nil, err
	}
	if err := g.compileRules(ct); err != nil {
		return nil, err
	}
	for k, p := range s.Refs {
		if _, err := splitPointer(p); err != nil || k == "" {
			return nil, fmt.Errorf("ref %q: %q is not a JSON pointer", k, p)
		}
	}
	for _, f := range t.Editable {
		if f == "" || strings.ContainsAny(f, "/~") {
			return nil, fmt.Errorf("editable %q must name a top-level argument", f)
		}
	}
	if (s.MaxCallsPerTrace > 0 || s.MaxRefusalsPerTrace > 0 || ct.scopeArg != "" || ct.refLinks || len(s.Rates) > 0) && g.state == nil {
		return nil, errors.New("a calls-per-trace or refusals-per-trace budget, a rate limit, a trace scope or a custody link to a ref needs a state store")
	}
	ct.maxRefusals = s.MaxRefusalsPerTrace
	if ct.maxRefusals == 0 && s.MaxCallsPerTrace > 0 {
		ct.maxRefusals = DefaultMaxRefusalsPerTrace
	}
	return ct, nil
}

// checkSpec refuses a declaration with a missing or unknown policy value.
func checkSpec(s custody.ToolSpec, h Handler) error {
	switch {
	case s.Name == "":
		return errors.New("the tool has no name")
	case h == nil:
		return errors.New("the tool has no handler")
	case s.Input == "" || s.Output == "":
		return errors.New("the tool needs an input and an output schema")
	case s.Access != custody.Read && s.Access != custody.Write:
		return fmt.Errorf("access %q: want %q or %q", s.Access, custody.Read, custody.Write)
	case s.Effect != custody.EffectNone && s.Effect != custody.EffectReversible && s.Effect != custody.EffectConsequential:
		return fmt.Errorf("effect %q: want %q, %q or %q", s.Effect, custody.EffectNone, custody.EffectReversible, custody.EffectConsequential)
	case s.Approval != custody.NotRequired && s.Approval != custody.HumanConfirmation:
		return fmt.Errorf("approval %q: want %q or %q", s.Approval, custody.NotRequired, custody.HumanConfirmation)
	case s.MaxCallsPerTrace < 0:
		return fmt.Errorf("maximum_calls_per_trace %d is negative", s.MaxCallsPerTrace)
	case s.MaxRefusalsPerTrace < 0:
		return fmt.Errorf("maximum_refusals_per_trace %d is negative", s.MaxRefusalsPerTrace)
	}
	return nil
}

// parseScope reads a "trace:<pointer>" scope.
func (t *tool) parseScope() error {
	scope := t.Spec.Scope
	if scope == "trace" {
		return errors.New(`resource scope "trace" names no argument: write "trace:/<argument>"`)
	}
	ptr, ok := strings.CutPrefix(scope, "trace:")
	if !ok {
		return nil
	}
	toks, err := splitPointer(ptr)
	if err != nil || len(toks) == 0 {
		return fmt.Errorf("resource scope %q: %q is not a JSON pointer to an argument", scope, ptr)
	}
	t.scopeArg, t.scopeName = ptr, toks[len(toks)-1]
	return nil
}

// parseLinks checks the custody links and collects the approval links.
func (t *tool) parseLinks() error {
	for i, l := range t.Spec.Links {
		toks, err := splitPointer(l.Arg)
		if err != nil || len(toks) == 0 {
			return fmt.Errorf("link %d: arg %q is not a JSON pointer to an argument", i, l.Arg)
		}
		switch {
		case l.Approval && len(toks) != 1:
			return fmt.Errorf("link %d: an approval link must name a top-level argument, not %q", i, l.Arg)
		case l.Approval:
			t.approvalArgs = append(t.approvalArgs, toks[0])
		case l.Ref == "":
			return fmt.Errorf("link %d: a custody link needs the ref it must match", i)
		default:
			t.refLinks = true
		}
	}
	return nil
}

// Tools returns the specs of the envelope's tools, in envelope order.
func (g *Gateway) Tools() []custody.ToolSpec {
	out := make([]custody.ToolSpec, len(g.order))
	for i, n := range g.order {
		out[i] = g.tools[n].Spec
	}
	return out
}

// ToolsFor returns the specs of the tools actor may see and call, in
// envelope order.
func (g *Gateway) ToolsFor(actor string) []custody.ToolSpec {
	var out []custody.ToolSpec
	for _, n := range g.order {
		if g.Allows(actor, n) {
			out = append(out, g.tools[n].Spec)
		}
	}
	return out
}

// Allows reports whether actor may see and call the tool named name.
func (g *Gateway) Allows(actor, name string) bool {
	return g.allowed == nil || g.allowed(actor, name)
}

// Tool returns the tool named name and whether the envelope has it.
func (g *Gateway) Tool(name string) (Tool, bool) {
	t, ok := g.tools[name]
	if !ok {
		return Tool{}, false
	}
	return t.Tool, true
}

// Envelope returns the envelope the gateway offers: its id and the specs
// of its tools, in envelope order.
func (g *Gateway) Envelope() custody.Envelope {
	return custody.Envelope{ID: g.envelope, Tools: g.Tools()}
}
