package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/custody-dev/custody/systems"
)

// demoCommand returns custody demo: it runs one system's demo end to end
// in-process, which exits 0 only if everything it checks holds.
func demoCommand(demos []systems.Command) command {
	names := make([]string, len(demos))
	width := 0
	for i, d := range demos {
		names[i] = strings.TrimPrefix(d.Name, "demo ")
		width = max(width, len(names[i]))
	}
	run := func(m *Main, ctx context.Context, args []string) int {
		for _, d := range demos {
			if len(args) > 0 && d.Name == "demo "+args[0] {
				return d.Run(ctx, m.systemEnv(), args[1:])
			}
		}
		fmt.Fprintf(m.Stderr, "usage: custody demo %s [flags]\n", strings.Join(names, "|"))
		for i, d := range demos {
			fmt.Fprintf(m.Stderr, "  %-*s  %s\n", width, names[i], d.Summary)
		}
		return exitUsage
	}
	return command{"run a seed system end to end with a scripted operator (" + strings.Join(names, ", ") + ")", run}
}
