package main

import (
	"context"

	"github.com/custody-dev/custody/internal/bench"
)

// floorSide makes calls on the disk floor shaped as tool says the
// gateway's are: a WRITE call appends two blocks in a row, as a WRITE call
// must have its intent durable before its side effect and its outcome
// durable before its result; a READ call appends one.
func floorSide(d *bench.DiskFloor, tool func(n int64) string) *bench.Side {
	return &bench.Side{Name: "disk floor", Unit: "calls", Tool: tool, Committed: d.Committed,
		Do: func(ctx context.Context, n int64) error {
			if tool(n) == toolWrite {
				if err := d.Append(ctx); err != nil {
					return err
				}
			}
			return d.Append(ctx)
		}}
}
