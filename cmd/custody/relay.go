package main

import (
	"cmp"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/mcpserver"
	"github.com/custody-dev/custody/upstream"
)

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
