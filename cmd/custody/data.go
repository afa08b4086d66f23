package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"

	"github.com/custody-dev/custody"
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
// index, is logged to stderr. A store that cannot be opened is
// unavailable, and the error says why: the operator reading it owns the
// directory.
func (m *Main) openData(dir string) (*sqlite.DB, error) {
	return m.openDataWith(dir, sqlite.Options{})
}

// openDataWith is openData with opts.
func (m *Main) openDataWith(dir string, opts sqlite.Options) (*sqlite.DB, error) {
	opts.Logger = slog.New(slog.NewTextHandler(m.Stderr, nil))
	db, err := sqlite.Open(dir, opts)
	var ce *custody.Error
	if err != nil && !errors.As(err, &ce) {
		return nil, &custody.Error{Kind: custody.EUNAVAILABLE, Message: fmt.Sprintf("cannot open the store in %s: %v", dir, err), Err: err}
	}
	return db, err
}
