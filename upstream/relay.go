package upstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/gate"
)

// RelayEnvelope is the id of the envelope whose tools are the routes of
// resources and prompts: every resources/read and prompts/get crosses
// gate.Gateway.Call as a call of one of them, and is recorded as any
// call is (call.succeeded, call.refused, call.failed).
const RelayEnvelope = "custody.relay"

// Names of the relay's routes in its envelope: a resource policy's key
// or a prompt's exposed name after the prefix. A read or a get nothing
// governs is a call of a route by the same prefix that is not in the
// envelope, denied and recorded like any such call.
const (
	ReadRoute = "resources/read:"
	GetRoute  = "prompts/get:"
)

// Refs on the entries of relayed reads and gets.
const (
	RefResourcePolicy   = "resource_policy"
	RefPromptDefinition = "prompt_definition_sha256"
)

// PromptOffer is one prompt an upstream offers, governed or not.
type PromptOffer struct {
	// Exposed is the name custody exposes it under (SERVER__PROMPT).
	Exposed  string
	Upstream string
	Prompt   *mcp.Prompt
	Policy   PromptPolicy
	// Key is the governance key that matched ("" when none: not exposed).
	Key string
}

// offerPrompts lists every prompt of every upstream with its governance
// (of a server whose listing the offers already hold, the prompts offered
// then: waiting.go), and refuses a resource or prompt key that governs
// nothing offered, but for one that may name what a server that has
// listed nothing yet offers.
func (s *Set) offerPrompts(listed map[string]bool) ([]PromptOffer, error) {
	var out []PromptOffer
	seen := map[string]string{}
	for _, c := range s.conns {
		for _, p := range s.serverPrompts(c) {
			o := PromptOffer{Exposed: s.exposedName(c.Name(), p.Name), Upstream: c.Name(), Prompt: p}
			if prev, dup := seen[o.Exposed]; dup {
				return nil, fmt.Errorf("two prompts would be exposed as %q: from %s and %s", o.Exposed, prev, o.Upstream)
			}
			seen[o.Exposed] = o.Upstream
			o.Policy, o.Key, _ = s.cfg.Prompts.For(o.Exposed)
			out = append(out, o)
		}
	}
	used := map[string]bool{}
	for _, o := range out {
		used[o.Key] = true
	}
	if unused := s.uncheckable("prompts", unusedKeys(s.cfg.Prompts, used), listed); len(unused) > 0 {
		return out, fmt.Errorf("prompts %q govern no prompt any upstream offers (names are SERVER__PROMPT; run 'custody config check' to list them)", unused)
	}
	if err := s.checkURICollisions(); err != nil {
		return nil, err
	}
	return out, s.checkResourceKeys(listed)
}

// checkResourceKeys refuses a resource key that matches no resource and
// no resource template any upstream offers.
func (s *Set) checkResourceKeys(listed map[string]bool) error {
	used := map[string]bool{}
	for _, c := range s.conns {
		for _, r := range c.Resources() {
			_, k, _ := s.cfg.Resources.For(s.exposedURI(c.Name(), r.URI))
			used[k] = true
		}
		for _, t := range c.ResourceTemplates() {
			_, k, _ := s.cfg.Resources.For(s.exposedURI(c.Name(), t.URITemplate))
			used[k] = true
		}
	}
	if unused := s.uncheckable("resources", unusedKeys(s.cfg.Resources, used), listed); len(unused) > 0 {
		return fmt.Errorf("resources %q govern no resource or resource template any upstream offers (URIs are SERVER+URI)", unused)
	}
	return nil
}

// unusedKeys returns the keys of g that used does not hold, sorted.
func unusedKeys[P any](g map[string]P, used map[string]bool) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(g)) {
		if !used[k] {
			out = append(out, k)
		}
	}
	return out
}

// PromptOffers returns every prompt the upstreams offered when the Set
// opened, governed or not.
func (s *Set) PromptOffers() []PromptOffer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.prompts)
}

// Relays reports whether there is anything to relay besides tools: a
// governed resource or prompt, or a server, whose requests of clients
// and log messages are relayed.
func (s *Set) Relays() bool {
	return len(s.cfg.Servers) > 0 || len(s.cfg.Resources) > 0 || len(s.cfg.Prompts) > 0
}

// Relay serves the governed resources and prompts of a Set. Each read and
// each get is a call of its route on a gateway of its own (RelayEnvelope),
// so that it takes the gateway's steps (the route is in the envelope, the
// arguments match their contract, the approval policy, the prompt's pin
// is not in quarantine) and ends with exactly one ledger entry; nothing is
// returned unless that entry is durable. Relay is safe for concurrent use.
type Relay struct {
	set  *Set
	gw   *gate.Gateway
	pins *Pins
}

// Relay builds the relay of s on a gateway configured like cfg (its
// Allowed, which speaks of tools, is not used), pinning every governed
// prompt's definition in pins.Prompts(). cfg's registry must hold the
// contracts of Contracts.
func (s *Set) Relay(ctx context.Context, cfg gate.Config, pins *Pins) (*Relay, error) {
	if pins == nil {
		return nil, errors.New("upstream relay: pins are required")
	}
	r := &Relay{set: s, pins: pins.Prompts()}
	s.mu.Lock()
	s.promptPins = r.pins
	s.mu.Unlock()
	var tools []gate.Tool
	for _, k := range slices.Sorted(maps.Keys(s.cfg.Resources)) {
		tools = append(tools, r.readTool(k, s.cfg.Resources[k]))
	}
	for _, o := range s.PromptOffers() {
		if o.Key == "" {
			s.log.Info("upstream prompt not governed: not exposed", "prompt", o.Exposed)
			continue
		}
		if err := r.pins.Check(ctx, o.Exposed, o.Upstream, PromptDefinitionOf(o.Prompt)); err != nil {
			return nil, fmt.Errorf("prompt %s: %w", o.Exposed, err)
		}
		tools = append(tools, r.getTool(o))
	}
	tools = append(tools, r.completeTool(), r.subscribeTool(true), r.subscribeTool(false))
	tools = append(tools, s.askTools()...)
	cfg.Allowed = nil
	gw, err := gate.New(cfg, RelayEnvelope, tools)
	if err != nil {
		return nil, err
	}
	r.gw = gw
	s.mu.Lock()
	if s.relay == nil {
		close(s.relayBuilt)
	}
	s.relay = r
	s.mu.Unlock()
	return r, nil
}

// Gateway returns the relay's gateway (its approvals are checked against
// it: see gate.Gateway.CheckApproval).
func (r *Relay) Gateway() *gate.Gateway { return r.gw }

// recheckPrompts compares the prompts a server now offers with their pins
// after it said its list changed (or was restarted): a changed prompt is
// quarantined. Called with s.mu held.
func (s *Set) recheckPrompts(ctx context.Context) {
	if s.promptPins == nil {
		return
	}
	exposed := map[string]bool{}
	for _, o := range s.prompts {
		exposed[o.Exposed] = o.Key != ""
	}
	for _, c := range s.conns {
		for _, p := range c.Prompts() {
			name := s.exposedName(c.Name(), p.Name)
			if !exposed[name] {
				continue
			}
			if err := s.promptPins.Check(ctx, name, c.Name(), PromptDefinitionOf(p)); err != nil {
				s.log.Error("upstream prompt re-check failed", "prompt", name, "err", err)
			}
		}
	}
}

// Resources returns the governed resources the upstreams list now, under
// their exposed URIs, without _meta keys under custody.MetaPrefix.
func (r *Relay) Resources() []*mcp.Resource {
	var out []*mcp.Resource
	for _, c := range r.set.conns {
		for _, res := range c.Resources() {
			uri := r.set.exposedURI(c.Name(), res.URI)
			if _, _, ok := r.set.cfg.Resources.For(uri); !ok {
				continue
			}
			cp := *res
			cp.URI, cp.Meta = uri, withoutCustodyMeta(res.Meta)
			out = append(out, &cp)
		}
	}
	return out
}

// ResourceTemplates returns the resource templates whose exposed URI
// template a resource key matches.
func (r *Relay) ResourceTemplates() []*mcp.ResourceTemplate {
	var out []*mcp.ResourceTemplate
	for _, c := range r.set.conns {
		for _, t := range c.ResourceTemplates() {
			uri := r.set.exposedURI(c.Name(), t.URITemplate)
			if _, _, ok := r.set.cfg.Resources.For(uri); !ok {
				continue
			}
			cp := *t
			cp.URITemplate, cp.Meta = uri, withoutCustodyMeta(t.Meta)
			out = append(out, &cp)
		}
	}
	return out
}

// Prompts returns the governed prompts as pinned: a prompt its server
// changed is listed as it was pinned until an operator approves the
// change, and getting it is refused meanwhile.
func (r *Relay) Prompts() []*mcp.Prompt {
	var out []*mcp.Prompt
	for _, o := range r.set.PromptOffers() {
		if o.Key == "" {
			continue
		}
		d, ok := r.pins.Definition(o.Exposed)
		if !ok {
			continue
		}
		out = append(out, &mcp.Prompt{Name: o.Exposed, Title: d.Title, Description: d.Description, Arguments: d.Arguments})
	}
	return out
}

// withoutCustodyMeta returns meta without the keys under
// custody.MetaPrefix, which only custody speaks under.
func withoutCustodyMeta(meta mcp.Meta) mcp.Meta { return custody.ForeignMeta(meta) }

// digest is the hex SHA-256 of the JSON encoding of v.
func digest(v any) (string, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:]), nil
}

// ResourceOffer is one resource or resource template an upstream lists,
// governed or not.
type ResourceOffer struct {
	// Exposed is the URI (or URI template) custody exposes it under.
	Exposed  string
	Upstream string
	Template bool
	Policy   ResourcePolicy
	// Key is the governance key that matched ("" when none: not exposed).
	Key string
}

// ResourceOffers returns every resource and resource template the
// upstreams list now, governed or not.
func (s *Set) ResourceOffers() []ResourceOffer {
	var out []ResourceOffer
	add := func(server, uri string, template bool) {
		o := ResourceOffer{Exposed: s.exposedURI(server, uri), Upstream: server, Template: template}
		o.Policy, o.Key, _ = s.cfg.Resources.For(o.Exposed)
		out = append(out, o)
	}
	for _, c := range s.conns {
		for _, r := range c.Resources() {
			add(c.Name(), r.URI, false)
		}
		for _, t := range c.ResourceTemplates() {
			add(c.Name(), t.URITemplate, true)
		}
	}
	return out
}

// checkURICollisions refuses two servers exposing a resource (or
// template) under one URI, which only servers of prefix "" can.
func (s *Set) checkURICollisions() error {
	seen := map[string]string{}
	for _, o := range s.ResourceOffers() {
		if prev, dup := seen[o.Exposed]; dup && prev != o.Upstream {
			return fmt.Errorf("two resources would be exposed as %q: from %s and %s (give one server a prefix)", o.Exposed, prev, o.Upstream)
		}
		seen[o.Exposed] = o.Upstream
	}
	return nil
}

// OnListChanged registers f to be told (on a goroutine of its own) when
// what a server offers may have changed: it said its list changed, or it
// was restarted. The listings of the relay are then as they are now.
func (r *Relay) OnListChanged(f func(ctx context.Context)) {
	r.set.mu.Lock()
	defer r.set.mu.Unlock()
	r.set.listListeners = append(r.set.listListeners, f)
}

// tellListChanged tells each of ls that a listing may have changed.
func tellListChanged(ls []func(ctx context.Context)) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, f := range ls {
		f(ctx)
	}
}
