package main

import (
	"context"
	"fmt"
	"io"
)

// followRepins makes a re-pin decision take effect when it is taken,
// however it was taken (the console, POST /v1/approvals/{id}/decision,
// `custody approvals approve` in another process, another instance on a
// shared store): it re-pins the quarantined tools whose re-pin request
// was approved at start, for the decisions taken while no serve ran, and
// again whenever an approval changes (the store's notifications, else
// the approval service's slow poll), until ctx ends.
func (s *stack) followRepins(ctx context.Context, stderr io.Writer) {
	if s.gen == nil || s.gen.pins == nil {
		return
	}
	changed := s.approvals.Watch(ctx, "")
	for {
		if _, err := s.gen.pins.Settle(ctx); err != nil && ctx.Err() == nil {
			fmt.Fprintf(stderr, "custody: re-pin: %v\n", err)
		}
		if _, ok := <-changed; !ok {
			return
		}
	}
}
