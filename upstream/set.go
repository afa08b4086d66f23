// Package upstream puts custody in front of the tools a team already has:
// MCP servers, started over stdio or reached over streamable HTTP, and
// plain HTTP endpoints. Each upstream tool that the configuration governs
// becomes a gate.Tool whose contracts are the tool's own schemas (objects
// closed to members they do not declare) plus the policy's narrowing, so
// that its calls take the same eight steps as every other call. A tool
// nobody governs is not exposed: a call to it is denied like any tool
// outside the envelope.
//
// Every exposed MCP tool's definition is pinned on the evidence ledger
// (Pins): a server that later offers a different definition has the tool
// quarantined until an operator approves the change.
//
// Resources, resource templates and prompts are relayed the same way
// (Relay): only what Config.Resources and Config.Prompts govern is
// listed, each resources/read, prompts/get, completion/complete and
// resources/subscribe is a call of a route on a gateway of its own
// (RelayEnvelope) and ends with a ledger entry, and prompts are pinned
// and quarantined like tools, apart from them (Pins.Prompts).
package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/ledger"
)

// Config declares the upstreams and how their tools are governed.
type Config struct {
	Servers    []Server
	HTTPTools  []HTTPTool
	Governance Governance
	// Resources and Prompts govern the upstreams' resources and prompts
	// (relay.go); nothing of either is exposed without them.
	Resources ResourceGovernance
	Prompts   PromptGovernance
	Logger    *slog.Logger
	// HTTPClient calls the HTTP tools; one without a client timeout (the
	// gateway's deadline bounds each call) when nil.
	HTTPClient *http.Client
	// RequireAll makes Open fail when a server cannot be reached
	// (--require-all-upstreams). Without it such a server is kept down
	// and tried again with backoff (see Dial), and its tools appear when
	// it comes up (waiting.go).
	RequireAll bool
	// MinBackoff and MaxBackoff bound the wait between attempts to
	// reach a server (see ConnOptions); the defaults when zero.
	MinBackoff, MaxBackoff time.Duration
	// Tokens keeps the access tokens of the servers with OAuth, sealed;
	// nil: in memory only, obtained again at each start.
	Tokens *TokenVault
}

// Offer is one tool an upstream offers, governed or not.
type Offer struct {
	// Exposed is the name custody exposes it under.
	Exposed  string
	Upstream string
	// Tool is the MCP tool as its server declared it; nil for an HTTP tool.
	Tool *mcp.Tool
	// Policy governs it when Key is not "".
	Policy Policy
	// Key is the governance key that matched ("" when none: not exposed).
	Key string
	// Waiting says the tool's server has listed nothing since custody
	// started: the tool is known only by its governance key (an exact
	// name), Tool is nil, and its calls are unavailable until the server
	// lists it (waiting.go).
	Waiting bool
}

// Set is the running upstreams of one configuration.
type Set struct {
	cfg   Config
	log   *slog.Logger
	conns []*Conn
	pins  *Pins

	mu      sync.Mutex
	offers  []Offer
	prompts []PromptOffer
	// promptPins are the pins of prompts once a Relay was built.
	promptPins *Pins
	// listeners are told of every update of a governed resource
	// (subscribe.go).
	listeners []func(ctx context.Context, uri string)
	// logListeners are told of the log messages of servers without a
	// call in flight (client.go).
	logListeners []func(ctx context.Context, p *logMessage)
	// relay asks clients the servers' requests of them (ask.go), once
	// built; relayBuilt is closed then.
	relay      *Relay
	relayBuilt chan struct{}
	// listListeners are told when what a server offers may have changed
	// (Relay.OnListChanged).
	listListeners []func(ctx context.Context)
	changed       chan struct{}
	// listed are the servers whose listings the offers hold; a server
	// down since Open is offered by its exact keys until it lists.
	listed map[string]bool
	// revision counts the changes of the offers since Open.
	revision uint64
}

// Open connects to every MCP server of cfg and lists its tools. It fails
// when two tools would be exposed under one name, or a governance key
// matches nothing (a typo that would leave a tool ungoverned must not
// pass silently), and with cfg.RequireAll when a server cannot be
// reached. A server that cannot be reached is otherwise kept down: a key
// that may name what it offers cannot be checked yet, and is logged as
// such, then checked when the server lists (waiting.go).
func Open(ctx context.Context, cfg Config) (*Set, error) {
	s := &Set{cfg: cfg, log: cfg.Logger, changed: make(chan struct{}, 1), relayBuilt: make(chan struct{})}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	for _, srv := range cfg.Servers {
		c, err := Dial(ctx, srv, ConnOptions{Logger: s.log, ToolsChanged: s.toolsChanged, ResourceUpdated: s.updatedOf(srv.Name),
			Ask: s.ask, Log: s.logIdle, Required: cfg.RequireAll, MinBackoff: cfg.MinBackoff, MaxBackoff: cfg.MaxBackoff, Tokens: cfg.Tokens})
		if err != nil {
			s.Close()
			return nil, err
		}
		s.conns = append(s.conns, c)
	}
	if err := s.offerFirst(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// offer lists every tool of every upstream with its governance: of each
// server what serverOffers says it offers.
func (s *Set) offer(listed map[string]bool) ([]Offer, error) {
	var out []Offer
	seen := map[string]string{}
	add := func(o Offer) error {
		if prev, dup := seen[o.Exposed]; dup {
			return fmt.Errorf("two tools would be exposed as %q: from %s and %s", o.Exposed, prev, o.Upstream)
		}
		seen[o.Exposed] = o.Upstream
		o.Policy, o.Key, _ = s.cfg.Governance.For(o.Exposed)
		if o.Key != "" && o.Policy.Timeout == 0 {
			o.Policy.Timeout = s.serverTimeout(o.Upstream)
		}
		out = append(out, o)
		return nil
	}
	for _, c := range s.conns {
		for _, o := range s.serverOffers(c, listed) {
			if err := add(o); err != nil {
				return nil, err
			}
		}
	}
	for _, h := range s.cfg.HTTPTools {
		if err := add(Offer{Exposed: h.Name, Upstream: "http:" + h.Name}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkKeys refuses a governance key that matches no offered tool, but
// for one that may name a tool of a server that has listed nothing yet.
func (s *Set) checkKeys(offers []Offer, listed map[string]bool) error {
	used := map[string]bool{}
	for _, o := range offers {
		used[o.Key] = true
	}
	var unused []string
	for _, k := range slices.Sorted(maps.Keys(s.cfg.Governance)) {
		if !used[k] {
			unused = append(unused, k)
		}
	}
	if unused = s.uncheckable("tools", unused, listed); len(unused) > 0 {
		return fmt.Errorf("tools %q govern no tool any upstream offers (names are SERVER__TOOL for MCP tools; run 'custody config check' to list them)", unused)
	}
	return nil
}

// Offers returns every tool the upstreams offer, governed or not.
func (s *Set) Offers() []Offer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.offers)
}

// Contracts returns the contracts of the governed tools, by file name,
// for contract.Options.Extra: each tool's input schema (closed unless
// its policy opens it), its output contract, and its policy's schemas.
func (s *Set) Contracts() (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, o := range s.Offers() {
		if o.Key == "" {
			continue
		}
		if err := s.contracts(o, out); err != nil {
			return nil, fmt.Errorf("tool %s: %w", o.Exposed, err)
		}
	}
	return out, s.relayContracts(out)
}

// contracts adds the contracts of one governed tool.
func (s *Set) contracts(o Offer, out map[string][]byte) error {
	if o.Waiting {
		out[file(o.Exposed, "input")], out[file(o.Exposed, "result")] = waitingInput, resultSchema("")
		return nil
	}
	in, outSchema, err := s.schemas(o)
	if err != nil {
		return err
	}
	if !o.Policy.OpenArguments {
		if in, err = CloseObjects(in); err != nil {
			return fmt.Errorf("input schema: %w", err)
		}
	}
	if in, err = withoutID(in); err != nil {
		return fmt.Errorf("input schema: %w", err)
	}
	if err := checkConditions(o.Policy, in); err != nil {
		return err
	}
	out[file(o.Exposed, "input")] = in
	switch {
	case o.Tool == nil:
		// An HTTP tool's output schema is the configuration's own: its
		// objects are closed like the arguments, so a reply carrying
		// members nobody declared is withheld, not passed on.
		if out[file(o.Exposed, "output")], err = CloseObjects(outSchema); err != nil {
			return fmt.Errorf("output schema: %w", err)
		}
	case outSchema != nil:
		out[file(o.Exposed, "output")] = outSchema
		out[file(o.Exposed, "result")] = resultSchema(contractURI(o.Exposed, "output"))
	default:
		out[file(o.Exposed, "result")] = resultSchema("")
	}
	if o.Policy.Arguments != nil {
		if out[file(o.Exposed, "policy-arguments")], err = withDialect(o.Policy.Arguments); err != nil {
			return fmt.Errorf("policy arguments: %w", err)
		}
	}
	if o.Policy.Output != nil {
		pol := o.Policy.Output
		if o.Tool != nil {
			pol = resultPolicySchema(pol)
		}
		if out[file(o.Exposed, "policy-output")], err = withDialect(pol); err != nil {
			return fmt.Errorf("policy output: %w", err)
		}
	}
	return nil
}

// schemas returns a tool's own input and output schemas (output nil when
// an MCP tool declares none).
func (s *Set) schemas(o Offer) (in, out json.RawMessage, err error) {
	if o.Tool == nil {
		h := s.httpTool(o.Exposed)
		return h.Input, h.Output, nil
	}
	d, err := DefinitionOf(o.Tool)
	if err != nil {
		return nil, nil, err
	}
	if d.OutputSchema != nil {
		if d.OutputSchema, err = withoutID(d.OutputSchema); err != nil {
			return nil, nil, fmt.Errorf("output schema: %w", err)
		}
	}
	return d.InputSchema, d.OutputSchema, nil
}

// withoutID drops a schema's root $id: each tool's schema is registered
// under a name of custody's, so that two servers' ids cannot collide.
func withoutID(schema json.RawMessage) (json.RawMessage, error) {
	tree, err := decodeTree(schema)
	if err != nil {
		return nil, err
	}
	obj, ok := tree.(map[string]any)
	if !ok {
		return nil, errors.New("the schema is not a JSON object")
	}
	if _, has := obj["$id"]; !has {
		return schema, nil
	}
	delete(obj, "$id")
	return encodeTree(obj)
}

func (s *Set) httpTool(name string) HTTPTool {
	for _, h := range s.cfg.HTTPTools {
		if h.Name == name {
			return h
		}
	}
	return HTTPTool{}
}

// file is the contract file name of one schema of a tool.
func file(exposed, part string) string { return "upstream." + exposed + "." + part + ".json" }

// contractURI is the $id the registry gives a contract file.
func contractURI(exposed, part string) string {
	return "urn:custody:contract:" + url.PathEscape(file(exposed, part))
}

// ref is how a gate.Tool names one schema of a tool.
func ref(exposed, part string) string { return contractURI(exposed, part) + "#" }

// Tools returns the governed tools as gateway tools, each checked against
// its pin first (pins may be nil: no pinning, for commands that only look).
func (s *Set) Tools(ctx context.Context, pins *Pins) ([]gate.Tool, error) {
	// Under the lock: a server's list change may be re-checking the pins
	// (toolsChanged) already.
	s.mu.Lock()
	s.pins = pins
	s.mu.Unlock()
	client := s.cfg.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	var out []gate.Tool
	for _, o := range s.Offers() {
		if o.Key == "" {
			s.log.Info("upstream tool not governed: not exposed", "tool", o.Exposed)
			continue
		}
		t, err := s.tool(ctx, o, client)
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", o.Exposed, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// tool builds the gateway tool of one governed offer.
func (s *Set) tool(ctx context.Context, o Offer, client *http.Client) (gate.Tool, error) {
	if o.Waiting {
		return s.waitingTool(o), nil
	}
	p := o.Policy
	spec := custody.ToolSpec{
		Name: o.Exposed, Input: ref(o.Exposed, "input"),
		Access: p.Access, Effect: p.Effect, Approval: p.Approval, MaxCallsPerTrace: p.MaxCallsPerTrace,
		MaxRefusalsPerTrace: p.MaxRefusalsPerTrace, Grants: p.Grants, ApprovalWait: p.ApprovalWait,
		Approvers: p.Approvers, Conditions: p.Conditions, Rates: p.Rates,
	}
	if p.Arguments != nil {
		spec.ArgumentsPolicy = ref(o.Exposed, "policy-arguments")
	}
	if p.Output != nil {
		spec.OutputPolicy = ref(o.Exposed, "policy-output")
	}
	t := gate.Tool{Spec: spec, Editable: p.Editable, Deadline: p.Timeout}
	in, outSchema, err := s.schemas(o)
	if err != nil {
		return t, err
	}
	if o.Tool == nil {
		h := s.httpTool(o.Exposed)
		t.Spec.Description, t.Spec.Output = h.Description, ref(o.Exposed, "output")
		t.Handler = h.handler(client)
		t.Refs = staticRefs(map[string]string{RefUpstream: o.Upstream})
		t.Published = &gate.Published{Input: in, Output: outSchema}
		return t, nil
	}
	t.Spec.Description, t.Spec.Output = o.Tool.Description, ref(o.Exposed, "result")
	t.MCPResult = true
	declared, err := json.Marshal(o.Tool)
	if err != nil {
		return t, fmt.Errorf("tool %q of %s: %w", o.Tool.Name, o.Upstream, err)
	}
	t.Published = &gate.Published{Input: in, Output: outSchema, Declared: declared}
	if !p.OpenArguments {
		if t.Published.Input, err = CloseObjects(in); err != nil {
			return t, err
		}
	}
	t.Handler = s.mcpHandler(o.Upstream, o.Tool.Name, p.maxResultBytes())
	if s.pins != nil {
		d, err := DefinitionOf(o.Tool)
		if err != nil {
			return t, err
		}
		if err := s.pins.Check(ctx, o.Exposed, o.Upstream, d); err != nil {
			return t, err
		}
		t.Admit = s.admit(o.Exposed, d)
		name, up := o.Exposed, o.Upstream
		t.Refs = func() map[string]string {
			return map[string]string{RefUpstream: up, RefDefinition: s.pins.Pinned(name)}
		}
	} else {
		t.Refs = staticRefs(map[string]string{RefUpstream: o.Upstream})
	}
	return t, nil
}

// admit is the gateway's check of a pinned tool: its pin must not be in
// quarantine, and its pinned schemas must be the ones compiled at start
// (loaded, a definition whose schemas an operator approved while custody
// ran is refused until a restart compiles them: custody never validates
// against one definition while the ledger names another).
func (s *Set) admit(name string, loaded Definition) func(ctx context.Context) error {
	quarantine := s.pins.Admit(name)
	return func(ctx context.Context) error {
		if err := quarantine(ctx); err != nil {
			return err
		}
		pinned, ok := s.pins.Definition(name)
		if ok && !sameSchemas(pinned, loaded) {
			return custody.Errorf(custody.EUNAVAILABLE,
				"tool %q was re-pinned with new schemas while custody ran: restart custody to load them", name)
		}
		return nil
	}
}

// sameSchemas reports whether two definitions declare the same schemas.
func sameSchemas(a, b Definition) bool {
	return jsonEqual(a.InputSchema, b.InputSchema) && jsonEqual(a.OutputSchema, b.OutputSchema)
}

// jsonEqual compares two JSON documents by their canonical form.
func jsonEqual(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	ca, errA := ledger.Canonicalize(a)
	cb, errB := ledger.Canonicalize(b)
	return errA == nil && errB == nil && string(ca) == string(cb)
}

func staticRefs(m map[string]string) func() map[string]string {
	return func() map[string]string { return m }
}

// mcpHandler calls tool on the named server. A result with isError set is
// the tool's own failure: a *gate.ToolError carrying it.
func (s *Set) mcpHandler(server, tool string, maxBytes int64) gate.Handler {
	return func(ctx context.Context, c custody.Call) (json.RawMessage, error) {
		conn := s.conn(server)
		if conn == nil {
			return nil, fmt.Errorf("upstream %q is not configured", server)
		}
		ctx, limit := withResultLimit(ctx, maxBytes)
		out, err := conn.Call(ctx, tool, c.Args, c.Meta)
		if err != nil && limit.over.Load() {
			// The tool ran and answered: its answer is what is refused.
			return nil, &custody.Error{Kind: custody.EINVALID, Err: err, Message: fmt.Sprintf(
				"the result of %s is over the %d bytes its policy allows (maxResultBytes): custody stopped reading it, and it is not returned", c.Tool, maxBytes)}
		}
		if err != nil {
			return nil, err
		}
		if int64(len(out)) > maxBytes {
			// The tool ran and answered: its answer is what is refused.
			return nil, custody.Errorf(custody.EINVALID, "the result of %s is %d bytes, over the %d bytes its policy allows (maxResultBytes): it is not returned",
				c.Tool, len(out), maxBytes)
		}
		var r struct {
			IsError bool `json:"isError"`
		}
		if json.Unmarshal(out, &r) == nil && r.IsError {
			return nil, &gate.ToolError{Output: out}
		}
		return out, nil
	}
}

func (s *Set) conn(name string) *Conn {
	for _, c := range s.conns {
		if c.Name() == name {
			return c
		}
	}
	return nil
}

// toolsChanged re-checks the pins after a server's tool list changed (it
// said so, or it was restarted): a changed definition of an exposed tool
// is quarantined. The tools and prompts of a server that lists for the
// first time are offered (reoffer), each governed tool pinned here as it
// first appears; others that appeared are not exposed until a restart
// with a configuration that governs them.
func (s *Set) toolsChanged() {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s.reoffer()
	s.recheckPrompts(ctx)
	s.resubscribe(ctx)
	go tellListChanged(slices.Clone(s.listListeners))
	if s.pins == nil {
		if s.promptPins != nil {
			s.signalChanged()
		}
		return
	}
	exposed := map[string]bool{}
	for _, o := range s.offers {
		exposed[o.Exposed] = o.Key != ""
	}
	for _, c := range s.conns {
		for _, t := range c.Tools() {
			name := s.exposedName(c.Name(), t.Name)
			if !exposed[name] {
				continue
			}
			d, err := DefinitionOf(t)
			if err == nil {
				err = s.pins.Check(ctx, name, c.Name(), d)
			}
			if err != nil {
				s.log.Error("upstream tool re-check failed", "tool", name, "err", err)
			}
		}
	}
	s.signalChanged()
}

// signalChanged tells Changed's receiver, without waiting.
func (s *Set) signalChanged() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// Close ends every session and stops every stdio server.
func (s *Set) Close() error {
	var errs []error
	for _, c := range s.conns {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// Changed receives after the pins were re-checked because a server's
// tool, resource or prompt list changed.
func (s *Set) Changed() <-chan struct{} { return s.changed }
