package systems

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/contract"
)

// The helpers below are the program's ways with flags, settings and
// input: cmd/custody's own commands use them too, so that a system's
// subcommand reads and fails like every other.

// Setting returns the environment variable name, trimmed, or def when it
// is unset or empty.
func (e Env) Setting(name, def string) string {
	if v := strings.TrimSpace(e.Getenv(name)); v != "" {
		return v
	}
	return def
}

// Flags returns the flag set of custody NAME, reporting to Stderr: its
// usage is "usage: custody NAME USAGE" and the flags.
func (e Env) Flags(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet("custody "+name, flag.ContinueOnError)
	fs.SetOutput(e.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.Stderr, "usage: custody %s %s\n", name, usage)
		fs.PrintDefaults()
	}
	return fs
}

// Parse parses args into fs and reports whether to go on; code is the
// exit code when not: ExitOK for -h, ExitUsage for a usage error.
func (e Env) Parse(fs *flag.FlagSet, args []string) (ok bool, code int) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return false, ExitOK
		}
		return false, ExitUsage
	}
	return true, ExitOK
}

// FlagUsage prints a flag problem and the usage of fs, and returns
// ExitUsage.
func (e Env) FlagUsage(fs *flag.FlagSet, msg string) int {
	fmt.Fprintf(e.Stderr, "%s: %s\n", fs.Name(), msg)
	fs.Usage()
	return ExitUsage
}

// DataFlag adds --data to fs: the data directory holding the store,
// $CUSTODY_DATA or ./custody-data by default.
func (e Env) DataFlag(fs *flag.FlagSet) *string {
	return fs.String("data", e.Setting("CUSTODY_DATA", "./custody-data"),
		"data `DIR` holding the ledger, approvals and signing key (env CUSTODY_DATA)")
}

// ContractsFlag adds --contracts to fs: a directory of user contracts,
// $CUSTODY_CONTRACTS by default.
func (e Env) ContractsFlag(fs *flag.FlagSet) *string {
	return fs.String("contracts", e.Setting("CUSTODY_CONTRACTS", ""),
		"directory of user contracts: every *.json in it (default $CUSTODY_CONTRACTS)")
}

// ConfigFlag adds --config to fs: the configuration file,
// $CUSTODY_CONFIG by default.
func (e Env) ConfigFlag(fs *flag.FlagSet) *string {
	return fs.String("config", e.Setting("CUSTODY_CONFIG", ""),
		"configuration `FILE`: upstream MCP servers, HTTP tools, their governance (env CUSTODY_CONFIG)")
}

// ReadInput reads a document from a file, or from Stdin for "-". It reads
// one byte past the registry's cap, so an oversized document is refused
// by the registry without being read whole.
func (e Env) ReadInput(file string) ([]byte, error) {
	r := e.Stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	raw, err := io.ReadAll(io.LimitReader(r, contract.DefaultMaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	return raw, nil
}

// FailViolations reports err as Host.Fail does, then each of its
// violations, one a line, and returns Fail's exit code.
func (e Env) FailViolations(err error) int {
	code := e.Host.Fail(err)
	for _, v := range custody.AsError(err).Violations {
		fmt.Fprintf(e.Stderr, "  %s: %s\n", orRoot(v.Instance), v.Message)
	}
	return code
}

// LoadFailed reports contracts that cannot be loaded as Host.Fail does:
// a configuration problem, so it returns ExitUsage.
func (e Env) LoadFailed(err error) int {
	e.Host.Fail(err)
	return ExitUsage
}

func orRoot(ptr string) string {
	if ptr == "" {
		return "(root)"
	}
	return ptr
}

// IsTerminal reports whether w is a character device: a progress bar is
// drawn only there.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
