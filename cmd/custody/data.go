package main

import (
	"flag"
	"log/slog"

	"github.com/custody-dev/custody/sqlite"
)

// dataFlag adds --data to fs: the data directory holding the store,
// $CUSTODY_DATA or ./custody-data by default.
func (m *Main) dataFlag(fs *flag.FlagSet) *string {
	return fs.String("data", m.env("CUSTODY_DATA", "./custody-data"),
		"data `DIR` holding the ledger, approvals and signing key (env CUSTODY_DATA)")
}

// openData opens the store in dir, creating it on first use. What the
// store does on its own that takes long, such as rebuilding its lookup
// index, is logged to stderr.
func (m *Main) openData(dir string) (*sqlite.DB, error) {
	return sqlite.Open(dir, sqlite.Options{Logger: slog.New(slog.NewTextHandler(m.Stderr, nil))})
}
