package main

import (
	"context"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/ledger"
	"github.com/custody-dev/custody/systems"
	"github.com/custody-dev/custody/upstream"
)

// systemEnv returns the program as a system's subcommand sees it.
func (m *Main) systemEnv() systems.Env {
	return systems.Env{Stdin: m.Stdin, Stdout: m.Stdout, Stderr: m.Stderr, Getenv: m.Getenv, Host: host{m}}
}

// host is the program as the systems' subcommands use it.
type host struct{ m *Main }

var _ systems.Host = host{}

// Registry loads the seed, example and user contracts.
func (h host) Registry(dir string) (*contract.Registry, error) { return loadRegistry(dir) }

// Open opens a stack as the program's commands do, SQLite-only for a
// scratch run.
func (h host) Open(ctx context.Context, o systems.Open) (*systems.Stack, error) {
	m := h.m
	if o.Scratch {
		m = m.sqliteOnly()
	}
	st, err := m.openStack(ctx, o.Data, o.Contracts, o.Tools...)
	if err != nil {
		return nil, err
	}
	seal := func(ctx context.Context) (ledger.Report, error) {
		if _, err := st.db.Checkpoint(ctx); err != nil {
			return ledger.Report{}, err
		}
		return st.db.Verify(ctx)
	}
	return &systems.Stack{Core: coreOf(st), Seal: seal, Close: st.Close}, nil
}

// Ledger opens the SQLite store in dir.
func (h host) Ledger(dir string) (custody.Ledger, error) {
	db, err := h.m.openData(dir)
	if err != nil {
		return nil, err
	}
	return db, nil
}

// Upstreams connects to the upstreams of the configuration at path.
func (h host) Upstreams(ctx context.Context, path string) (*upstream.Set, error) {
	f, err := h.m.loadConfig(path)
	if err != nil || f == nil || !hasUpstreams(f) {
		return nil, err
	}
	up, _, err := h.m.openUpstreams(ctx, f, map[string][]byte{}, false, nil)
	return up, err
}

// Fail reports err as the program's commands do.
func (h host) Fail(err error) int { return h.m.fail(err) }
