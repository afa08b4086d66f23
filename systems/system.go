// Package systems is the contract between custody's core and the systems
// built on it. The core is the gateway: contracts, the call pipeline,
// approvals, the store and the ledger. A system brings what its domain
// needs on top: contract documents, tools, console pages, CLI
// subcommands and background work. Each lives in its own folder under
// systems/ and meets System; cmd/custody lists them and loops over the
// list, so a new system is one folder and one line there.
//
// Nothing outside systems/ and cmd/ imports a system.
package systems

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/config"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/ledger"
	"github.com/custody-dev/custody/upstream"
)

// System is what a system built on custody brings to it.
type System interface {
	// Name is the system's name in --systems and the configuration's
	// "systems", and its console path, /apps/{name}/.
	Name() string
	// Contracts returns the contract documents its tools are checked
	// against. They join the registry before any user's, whether or not
	// the system is served, so that its schemas can always be named.
	Contracts() []contract.Source
	// Commands returns the CLI subcommands it adds: custody NAME ....
	Commands() []Command
	// Serve returns the system's part in one serve (or one front door
	// sharing serve's tools: call, mcp --stdio). It returns the zero
	// Served when set does not ask for the system, and an error that
	// names the missing setting when set asks for it but cannot run it.
	Serve(ctx context.Context, set Settings) (Served, error)
}

// Settings are what serve was told that a system may use. Each system
// reads the part meant for it.
type Settings struct {
	// Systems are the systems named by --systems or the configuration.
	Systems []string
	// Simulate runs the systems' simulated feeds beside the server; off,
	// the ledger holds only what really happened.
	Simulate bool
	// LLM and LLMEdge are the backends of the language hops (template,
	// ollama://..., openai://...); LLMEdge defaults to LLM.
	LLM, LLMEdge string
	// NATS joins the wildfire mesh over NATS at this URL; Mesh says how.
	NATS string
	Mesh config.Mesh
	// Room is a Brain room file whose review queue the console shows.
	Room string
	// Getenv reads the environment (OTEL_EXPORTER_OTLP_*, say).
	Getenv func(string) string
	// Stderr is where a system reports what it joined or started.
	Stderr io.Writer
	// Logger takes the systems' warnings.
	Logger *slog.Logger
}

// Asked reports whether the settings name the system.
func (s Settings) Asked(name string) bool { return slices.Contains(s.Systems, name) }

// Served is a system's part in one serve. Every field may be empty.
type Served struct {
	// Title is the heading of its console app.
	Title string
	// Tools join the gateway's envelope, beside the configured ones.
	Tools []gate.Tool
	// Attach is called once the core is open, before the first call:
	// it returns the handler of the system's console app (nil for none).
	Attach func(ctx context.Context, core Core) (http.Handler, error)
	// CheckApproval checks an action of the system's that an operator
	// is about to approve and the gateway does not run itself; it
	// returns an error wrapping approval.ErrNoContract for an action
	// that is not the system's.
	CheckApproval func(ctx context.Context, a custody.Approval) error
	// Run does the system's background work until ctx ends; it is
	// started only when serve serves (not for call or mcp --stdio).
	Run func(ctx context.Context) error
	// Close releases what Serve and Attach opened, once serve is done.
	Close func(ctx context.Context) error
}

// Core is what the gateway lends a system once it is open.
type Core struct {
	// Store is the evidence ledger and the state beside it.
	Store custody.Store
	// Registry holds every contract, the system's among them.
	Registry *contract.Registry
	// Approvals requests, decides and consumes approvals.
	Approvals *approval.Service
	// Gateway runs calls through the whole pipeline.
	Gateway *gate.Gateway
	// LedgerID is the id of the ledger, unique to this deployment.
	LedgerID string
	// OperatorOf names the authenticated operator of a console request;
	// the console mounts system pages behind operator sign-in.
	OperatorOf func(*http.Request) string
}

// Exit codes of custody and of every subcommand a system adds. cmd/custody
// uses these values: there is one table.
const (
	ExitOK      = 0
	ExitFailed  = 1 // the work ran and found a problem (invalid, tampered, refused)
	ExitUsage   = 2 // bad flags, unknown schema, unreadable input
	ExitPending = 3 // a call is waiting for a human approval
)

// Command is a CLI subcommand a system adds to custody.
type Command struct {
	// Name is the word after custody: custody NAME .... A name "demo
	// NAME" is the system's scripted end-to-end run, which custody demo
	// NAME runs. No two commands of a program share a name.
	Name string
	// Summary is the command's line in custody's usage (in custody
	// demo's for a demo).
	Summary string
	// Run runs custody NAME args and returns the exit code.
	Run func(ctx context.Context, env Env, args []string) int
}

// Env is the program around a system's subcommand.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// Host opens what the core offers a command: see Host.
	Host Host
}

// Host is what the program offers a system's subcommand beyond its
// streams. cmd/custody implements it.
type Host interface {
	// Registry loads the contracts: the seed systems', the example's and
	// those in dir (none when empty). It returns the loader's error when
	// a contract does not load.
	Registry(dir string) (*contract.Registry, error)
	// Open opens the core as o says, as the program's own commands open
	// it: the store, the contracts, the approval service (notifying as
	// $CUSTODY_NOTIFY says) and a gateway on the example envelope plus
	// o.Tools. The caller closes the stack. It returns an error whose
	// kind is EUNAVAILABLE when the store cannot be opened, and the
	// loader's error when a contract does not load; nothing stays open.
	Open(ctx context.Context, o Open) (*Stack, error)
	// Ledger opens the ledger alone: SQLite in the data directory dir,
	// created on first use. The caller closes it. It returns an error
	// whose kind is EUNAVAILABLE when the store cannot be opened.
	Ledger(dir string) (custody.Ledger, error)
	// Upstreams connects to the upstream tools the configuration file at
	// path declares. It returns nil and no error when path is empty or
	// the file declares none; an error whose kind is EINVALID when the
	// file does not load, EUNAVAILABLE when an upstream cannot be
	// reached. The caller closes the set.
	Upstreams(ctx context.Context, path string) (*upstream.Set, error)
	// Fail reports err on stderr in the program's words and returns its
	// exit code.
	Fail(err error) int
}

// Open says what Host.Open opens.
type Open struct {
	// Data is the data directory of the store.
	Data string
	// Contracts is a directory of user contracts; none when empty.
	Contracts string
	// Tools join the gateway's envelope.
	Tools []gate.Tool
	// Scratch keeps the store in SQLite in Data whatever $CUSTODY_STORE
	// names: a scratch run (a demo, a simulation) never writes to a
	// shared store.
	Scratch bool
}

// Stack is the core a command opened with Host.Open.
type Stack struct {
	Core
	// Seal signs a checkpoint over the ledger, then verifies the whole
	// chain against the ledger's key and returns the verification.
	Seal func(ctx context.Context) (ledger.Report, error)
	// Close releases the stack: its tracer, its upstreams, its store.
	Close func() error
}

// List is the systems a program is built with, in the order their
// contracts load and their pages are listed.
type List []System

// Names returns the names of the list's systems.
func (l List) Names() []string {
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = s.Name()
	}
	return out
}

// Check refuses a name that no system of the list has.
func (l List) Check(names []string) error {
	for _, n := range names {
		if !slices.Contains(l.Names(), n) {
			return fmt.Errorf("unknown system %q: want one of %s", n, strings.Join(l.Names(), ", "))
		}
	}
	return nil
}

// Contracts returns every system's contract documents, in list order.
func (l List) Contracts() []contract.Source {
	var out []contract.Source
	for _, s := range l {
		out = append(out, s.Contracts()...)
	}
	return out
}
