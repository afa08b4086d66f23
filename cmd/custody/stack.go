package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/example"
	"github.com/custody-dev/custody/gate"
)

// stack is the running core: the store, the contracts, the approval
// service and the gateway offering the example envelope plus any tools a
// command adds.
type stack struct {
	db        dataStore
	reg       *contract.Registry
	approvals *approval.Service
	gw        *gate.Gateway
}

// contractsFlag adds --contracts to fs: a directory of user contracts,
// $CUSTODY_CONTRACTS by default.
func (m *Main) contractsFlag(fs *flag.FlagSet) *string {
	return fs.String("contracts", m.env("CUSTODY_CONTRACTS", ""),
		"directory of user contracts: every *.json in it (default $CUSTODY_CONTRACTS)")
}

// openStack opens the store (SQLite in dataDir, or the one
// $CUSTODY_STORE names: see openStore), loads the contracts (embedded,
// example, and contractsDir when set), builds the approval service and a
// gateway on the example envelope plus tools.
//
// Approvals notify through the webhooks listed in $CUSTODY_NOTIFY, in
// escalation order after the console inbox: "name=URL,name=URL" (for
// example "sms=https://sms.example/hook,pager=https://pager.example/hook").
// $CUSTODY_CONSOLE_URL is the console base URL the notifications link to.
func (m *Main) openStack(ctx context.Context, dataDir, contractsDir string, tools ...gate.Tool) (*stack, error) {
	_ = ctx // the store opens synchronously; kept for commands that pass theirs
	notifiers, err := m.notifiers()
	if err != nil {
		return nil, err
	}
	name, raw := example.Contract()
	reg, err := contract.Load(contract.Options{Dir: contractsDir, Extra: map[string][]byte{name: raw}})
	if err != nil {
		return nil, err
	}
	db, err := m.openStore(dataDir)
	if err != nil {
		return nil, err
	}
	s := &stack{db: db, reg: reg}
	if s.approvals, err = approval.New(approval.Config{Store: db, Ledger: db, Notifiers: notifiers}); err != nil {
		db.Close()
		return nil, err
	}
	env := example.Envelope(db, nil)
	env.Tools = append(env.Tools, tools...)
	logger := slog.New(slog.NewTextHandler(m.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if s.gw, err = gate.New(gate.Config{Registry: reg, Ledger: db, Approvals: s.approvals, State: db, Logger: logger}, env); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the store.
func (s *stack) Close() error { return s.db.Close() }

// notifiers reads $CUSTODY_NOTIFY.
func (m *Main) notifiers() ([]approval.Notifier, error) {
	spec := m.env("CUSTODY_NOTIFY", "")
	if spec == "" {
		return nil, nil
	}
	console := strings.TrimRight(m.env("CUSTODY_CONSOLE_URL", ""), "/")
	var out []approval.Notifier
	for _, item := range strings.Split(spec, ",") {
		name, url, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok || name == "" || url == "" {
			return nil, errors.New(`CUSTODY_NOTIFY: want "name=URL,name=URL"`)
		}
		out = append(out, &approval.Webhook{Name_: name, URL: url, ConsoleURL: console})
	}
	return out, nil
}

// errorJSON is how a command prints a refusal: the same shape as the API.
type errorJSON struct {
	Error custody.ErrorDetail `json:"error"`
}

// flagUsage prints a flag problem and the usage of fs, and returns the
// usage exit code.
func (m *Main) flagUsage(fs *flag.FlagSet, msg string) int {
	fmt.Fprintf(m.Stderr, "%s: %s\n", fs.Name(), msg)
	fs.Usage()
	return exitUsage
}
