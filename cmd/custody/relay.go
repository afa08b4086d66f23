package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/mcpserver"
	"github.com/custody-dev/custody/upstream"
)

// openRelay builds the relay of the upstreams' governed resources and
// prompts, when the configuration governs any, on a gateway configured
// like the tools' and sharing their pins' store; its approvals are
// checked against it.
func (s *stack) openRelay(ctx context.Context, gcfg gate.Config, pins *upstream.Pins) error {
	if !s.up.Relays() {
		return nil
	}
	r, err := s.up.Relay(ctx, gcfg, pins)
	if err != nil {
		return &custody.Error{Kind: custody.EUNAVAILABLE, Message: err.Error(), Err: err}
	}
	s.relay = r
	s.checks = append(s.checks, func(ctx context.Context, a custody.Approval) error {
		return r.Gateway().CheckApproval(ctx, a)
	})
	return nil
}

// mcpRelay is what the MCP door relays of the stack's upstreams besides
// tools; nil when nothing.
func (s *stack) mcpRelay() mcpserver.Relay {
	if s.relay == nil {
		return nil
	}
	return s.relay
}

// printRelayOffers prints one line a prompt, resource or resource
// template the upstreams offer: exposed or not, and what governs it.
func printRelayOffers(w io.Writer, set *upstream.Set) {
	prompts, resources := set.PromptOffers(), set.ResourceOffers()
	if len(prompts) == 0 && len(resources) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROMPT OR RESOURCE\tUPSTREAM\tEXPOSED\tMAX BYTES\tAPPROVAL\tGOVERNED BY")
	exposed := 0
	line := func(name, up, key string, maxBytes int64, approval custody.ApprovalPolicy) {
		if key == "" {
			fmt.Fprintf(tw, "%s\t%s\tno\t-\t-\t(no policy: denied)\n", name, up)
			return
		}
		exposed++
		size := "-"
		if maxBytes >= 0 {
			size = fmt.Sprint(maxBytes)
		}
		fmt.Fprintf(tw, "%s\t%s\tyes\t%s\t%s\t%s\n", name, up, size, cmp.Or(approval, custody.NotRequired), key)
	}
	for _, o := range prompts {
		line(o.Exposed, o.Upstream, o.Key, -1, o.Policy.Approval)
	}
	for _, o := range resources {
		maxBytes := o.Policy.MaxBytes
		if maxBytes == 0 {
			maxBytes = upstream.DefaultMaxResourceBytes
		}
		line(o.Exposed, o.Upstream, o.Key, maxBytes, o.Policy.Approval)
	}
	tw.Flush()
	fmt.Fprintf(w, "%d of %d prompts and resources exposed\n", exposed, len(prompts)+len(resources))
}
