package systems

import (
	"context"
	"fmt"
	"maps"
	"slices"
)

// Subcommand is one subcommand of a system's command (custody assure
// lint, custody brain packet, ...).
type Subcommand struct {
	Summary string
	Run     func(ctx context.Context, env Env, args []string) int
}

// Dispatch runs custody name args: the subcommand args[0] of subs with
// the rest of args. With no subcommand it prints the usage and returns
// ExitUsage; asked for help (-h, --help, help) it prints it and returns
// ExitOK; an unknown one is named, with the usage, and ExitUsage.
func (e Env) Dispatch(ctx context.Context, name string, subs map[string]Subcommand, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		e.subcommandUsage(name, subs)
		if len(args) == 0 {
			return ExitUsage
		}
		return ExitOK
	}
	c, ok := subs[args[0]]
	if !ok {
		fmt.Fprintf(e.Stderr, "custody %s: unknown subcommand %q\n\n", name, args[0])
		e.subcommandUsage(name, subs)
		return ExitUsage
	}
	return c.Run(ctx, e, args[1:])
}

// subcommandUsage lists subs, sorted, their summaries in one column.
func (e Env) subcommandUsage(name string, subs map[string]Subcommand) {
	fmt.Fprintf(e.Stderr, "usage: custody %s SUBCOMMAND [flags]\n\nsubcommands:\n", name)
	names := slices.Sorted(maps.Keys(subs))
	width := 8
	for _, n := range names {
		width = max(width, len(n)+1)
	}
	for _, n := range names {
		fmt.Fprintf(e.Stderr, "  %-*s %s\n", width, n, subs[n].Summary)
	}
}
