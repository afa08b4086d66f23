package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/systems"
)

// Exit codes shared by every subcommand: the systems' table.
const (
	exitOK      = systems.ExitOK
	exitFailed  = systems.ExitFailed  // the work ran and found a problem (invalid, tampered, refused)
	exitUsage   = systems.ExitUsage   // bad flags, unknown schema, unreadable input
	exitPending = systems.ExitPending // a call is waiting for a human approval
)

// Main is the program: main() only wires signals and the exit code, so
// tests run the real program in-process.
type Main struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	// ProgressEvery is how often a long run (a ledger verify) reports its
	// progress when Stderr is not a terminal; 10 seconds when zero.
	ProgressEvery time.Duration
	// Now, when set, is the clock serve checks access tokens' expiry by
	// (tests); time.Now when nil.
	Now func() time.Time
}

// NewMain returns a Main on the process's standard streams and environment.
func NewMain() *Main {
	return &Main{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
}

// command is one subcommand: a summary for the usage text and its runner.
type command struct {
	summary string
	run     func(m *Main, ctx context.Context, args []string) int
}

// Run runs the subcommand named by args[0] and returns the exit code.
func (m *Main) Run(ctx context.Context, args []string) int {
	cmds, err := m.commands()
	if err != nil {
		return m.fail(err)
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		m.usage(cmds)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(m.Stderr, "custody: unknown command %q\n\n", args[0])
		m.usage(cmds)
		return exitUsage
	}
	return c.run(m, ctx, args[1:])
}

func (m *Main) usage(cmds map[string]command) {
	fmt.Fprintln(m.Stderr, "usage: custody COMMAND [flags]\n\ncommands:")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(m.Stderr, "  %-12s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(m.Stderr, "\nRun 'custody COMMAND -h' for the flags of a command.")
}

// flags returns a flag set for a subcommand that reports to Stderr.
func (m *Main) flags(name, usage string) *flag.FlagSet { return m.systemEnv().Flags(name, usage) }

// parse parses args and reports whether to go on; code is the exit code
// when not (0 for -h, 2 for a usage error).
func (m *Main) parse(fs *flag.FlagSet, args []string) (ok bool, code int) {
	return m.systemEnv().Parse(fs, args)
}

// env returns the environment variable, or def when unset or empty.
func (m *Main) env(name, def string) string { return m.systemEnv().Setting(name, def) }

// fail prints err for a human and returns the exit code its kind maps to.
func (m *Main) fail(err error) int {
	e := custody.AsError(err)
	fmt.Fprintf(m.Stderr, "custody: %s: %s\n", e.Kind, e.Message)
	if e.Kind == custody.EINTERNAL && e.Err != nil {
		fmt.Fprintf(m.Stderr, "  cause: %v\n", e.Err)
	}
	return exitCode(e.Kind)
}

// exitCode maps an error kind to the CLI exit code: the one table.
func exitCode(kind string) int {
	switch kind {
	case "":
		return exitOK
	case custody.EPENDING:
		return exitPending
	case custody.ENOTFOUND, custody.EUNAUTHORIZED:
		return exitUsage
	default:
		return exitFailed
	}
}
