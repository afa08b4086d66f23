package main

import (
	"flag"

	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/example"
	"github.com/custody-dev/custody/gate"
)

// seedContracts returns the contracts custody serves before any user's:
// the systems' (the PEAS tools, the Brain packet) and the gateway's own
// Clinical Action Envelope, in the order 'custody contracts' lists them.
func seedContracts() []contract.Source {
	return append(builtWith().Contracts(), gate.EnvelopeContract())
}

// registry adds the --contracts flag to fs and returns a function that
// loads the contract registry once the flags are parsed: the seed
// contracts, the example contract, and every *.json in the directory named by
// --contracts (default $CUSTODY_CONTRACTS).
func (m *Main) registry(fs *flag.FlagSet) func() (*contract.Registry, error) {
	dir := m.contractsFlag(fs)
	return func() (*contract.Registry, error) { return loadRegistry(*dir) }
}

// loadRegistry loads the seed contracts, the example contract, and every
// *.json in dir (none when empty).
func loadRegistry(dir string) (*contract.Registry, error) {
	name, raw := example.Contract()
	return contract.Load(contract.Options{Contracts: seedContracts(), Dir: dir, Extra: map[string][]byte{name: raw}})
}
