package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/gate"
)

// A server that cannot be reached when the Set opens is kept down (see
// Dial) and has listed nothing: its tools cannot be offered with their
// own schemas yet. Each exact governance key that names one of them
// (SERVER__TOOL) is offered as a waiting tool, which every call finds
// unavailable (a call.refused entry), as a call of a server whose
// session ended is; a glob key offers nothing until the server lists.
// When the server lists for the first time, reoffer replaces the waiting
// offers with its tools and prompts, and Revision changes: a gateway
// built before lacks them until it is built again.

// waitingInput is the input contract of a waiting tool: any object, as
// no call gets past the policy step.
var waitingInput = json.RawMessage(`{"$schema":"` + draft2020 + `","type":"object"}`)

// listedNow returns the servers that have had a session.
func (s *Set) listedNow() map[string]bool {
	out := map[string]bool{}
	for _, c := range s.conns {
		if c.Listed() {
			out[c.Name()] = true
		}
	}
	return out
}

// offerFirst makes the offers of a Set that opens, under s.mu: a server
// that comes up meanwhile may be offering its tools already (reoffer).
func (s *Set) offerFirst() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	listed := s.listedNow()
	offers, err := s.offer(listed)
	if err == nil {
		err = s.checkKeys(offers, listed)
	}
	if err != nil {
		return err
	}
	prompts, err := s.offerPrompts(listed)
	if err != nil {
		return err
	}
	s.offers, s.prompts, s.listed = offers, prompts, listed
	return nil
}

// serverOffers returns what c offers: the tools offered before when the
// offers already hold its listing, the tools it lists when listed says it
// has listed, else a waiting offer for each exact governance key under its
// prefix.
func (s *Set) serverOffers(c *Conn, listed map[string]bool) []Offer {
	var out []Offer
	switch name := c.Name(); {
	case s.listed[name]:
		for _, o := range s.offers {
			if o.Upstream == name {
				out = append(out, Offer{Exposed: o.Exposed, Upstream: name, Tool: o.Tool})
			}
		}
	case listed[name]:
		for _, t := range c.Tools() {
			out = append(out, Offer{Exposed: s.exposedName(name, t.Name), Upstream: name, Tool: t})
		}
	default:
		// A server exposed without a prefix claims no key before it lists.
		prefix := s.prefixOf(name)
		for _, k := range slices.Sorted(maps.Keys(s.cfg.Governance)) {
			if prefix == "" {
				break
			}
			if !isGlob(k) && strings.HasPrefix(k, prefix) && len(k) > len(prefix) {
				out = append(out, Offer{Exposed: k, Upstream: name, Waiting: true})
			}
		}
	}
	return out
}

// serverPrompts returns the prompts of c: those offered before when the
// offers already hold its listing, else those it lists now.
func (s *Set) serverPrompts(c *Conn) []*mcp.Prompt {
	if !s.listed[c.Name()] {
		return c.Prompts()
	}
	var out []*mcp.Prompt
	for _, o := range s.prompts {
		if o.Upstream == c.Name() {
			out = append(out, o.Prompt)
		}
	}
	return out
}

// uncheckable returns the keys of unused (governance keys of kind
// "tools", "prompts" or "resources" that match nothing offered) that are
// errors: those that may govern what a server that has not listed yet
// offers are logged instead, to be checked when it lists.
func (s *Set) uncheckable(kind string, unused []string, listed map[string]bool) []string {
	var prefixes []string
	for _, c := range s.conns {
		if listed[c.Name()] {
			continue
		}
		if kind == "resources" {
			prefixes = append(prefixes, s.exposedURI(c.Name(), ""))
		} else {
			prefixes = append(prefixes, s.prefixOf(c.Name()))
		}
	}
	var out []string
	for _, k := range unused {
		if mayGovern(k, prefixes) {
			s.log.Warn("governance key matches nothing yet: a server it may name is down; it is checked when the server is up",
				"kind", kind, "key", k)
			continue
		}
		out = append(out, k)
	}
	return out
}

// reoffer offers the tools and prompts of the servers that have listed
// since the offers were made. Called with s.mu held. A key that still
// governs nothing is logged as the error it would have been at start:
// custody is running, and the rest of the configuration serves on.
func (s *Set) reoffer() {
	listed := s.listedNow()
	if maps.Equal(listed, s.listed) {
		return
	}
	offers, err := s.offer(listed)
	if err != nil {
		s.log.Error("upstream listed, but its tools cannot be offered", "err", err)
		return
	}
	if err := s.checkKeys(offers, listed); err != nil {
		s.log.Error("upstream listed: fix the configuration", "err", err)
	}
	prompts, err := s.offerPrompts(listed)
	if prompts == nil && err != nil {
		s.log.Error("upstream listed, but its prompts cannot be offered", "err", err)
		prompts = s.prompts
	} else if err != nil {
		s.log.Error("upstream listed: fix the configuration", "err", err)
	}
	for name := range listed {
		if !s.listed[name] {
			s.log.Info("upstream listed for the first time: its tools and prompts are offered", "upstream", name)
		}
	}
	s.offers, s.prompts, s.listed = offers, prompts, listed
	s.revision++
}

// Revision counts the changes of the offers since Open: a server that was
// down listed for the first time. A gateway built from Tools at one
// revision lacks the tools of a later one.
func (s *Set) Revision() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.revision
}

// waitingTool is the gateway tool of a waiting offer: declared as its
// policy says, and refused as unavailable at the policy step, before any
// approval is asked for or any intent recorded.
func (s *Set) waitingTool(o Offer) gate.Tool {
	p, server := o.Policy, o.Upstream
	spec := custody.ToolSpec{
		Name: o.Exposed, Input: ref(o.Exposed, "input"), Output: ref(o.Exposed, "result"),
		Description: fmt.Sprintf("Unavailable: upstream %s has not been reached since custody started.", server),
		Access:      p.Access, Effect: p.Effect, Approval: p.Approval,
	}
	unavailable := func(context.Context) error {
		if c := s.conn(server); c != nil && errors.Is(c.Err(), ErrNotConnected) {
			return custody.Errorf(custody.EUNAVAILABLE, "upstream %q is unavailable: it is not connected: an operator connects it in the console", server)
		}
		return custody.Errorf(custody.EUNAVAILABLE, "upstream %q is unavailable: it has not been reached since custody started", server)
	}
	return gate.Tool{
		Spec: spec, Deadline: p.Timeout, MCPResult: true, Admit: unavailable,
		Handler: func(ctx context.Context, _ custody.Call) (json.RawMessage, error) { return nil, unavailable(ctx) },
		Refs:    staticRefs(map[string]string{RefUpstream: server}),
		// The waiting tool is published as an open object, with the
		// description that says why it cannot be called.
		Published: &gate.Published{Input: waitingInput},
	}
}
