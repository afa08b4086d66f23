package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
	"github.com/custody-dev/custody/store/postgres"
	"github.com/custody-dev/custody/store/sqlite"
)

// dataFlag adds --data to fs: the data directory holding the store,
// $CUSTODY_DATA or ./custody-data by default.
func (m *Main) dataFlag(fs *flag.FlagSet) *string { return m.systemEnv().DataFlag(fs) }

// storeFlag adds --store to fs: a postgres:// URL keeps the ledger,
// approvals and state in PostgreSQL, shared by every instance given it;
// empty keeps them in SQLite in the data directory.
func (m *Main) storeFlag(fs *flag.FlagSet) *string {
	return fs.String("store", m.env("CUSTODY_STORE", ""),
		"keep the ledger, approvals and state at this postgres:// `URL` instead of SQLite in --data (env CUSTODY_STORE)")
}

// dataStore is what the commands use of a store: the store contracts and
// the ledger's upkeep. Both sqlite.DB and postgres.DB are one.
type dataStore interface {
	custody.Store
	Verify(ctx context.Context) (ledger.Report, error)
	VerifyWith(ctx context.Context, pub ed25519.PublicKey) (ledger.Report, error)
	Checkpoint(ctx context.Context) (custody.Checkpoint, error)
	LatestCheckpoint(ctx context.Context) (custody.Checkpoint, error)
	ExportJSONL(ctx context.Context, w io.Writer) error
	Commits() int64
	Size() int64
	PublicKeyFile() string
	// PublicKeys returns every key the ledger's checkpoints were signed
	// with, oldest first.
	PublicKeys() []ed25519.PublicKey
}

var (
	_ dataStore = (*sqlite.DB)(nil)
	_ dataStore = (*postgres.DB)(nil)
)

// withStore returns a copy of m whose $CUSTODY_STORE is store, when set,
// so that openStore, under any command, opens it.
func (m *Main) withStore(store string) *Main {
	if store == "" {
		return m
	}
	return m.withSetting("CUSTODY_STORE", store)
}

// withSetting returns a copy of m whose environment variable name is
// value.
func (m *Main) withSetting(name, value string) *Main {
	c := *m
	c.Getenv = func(k string) string {
		if k == name {
			return value
		}
		return m.Getenv(k)
	}
	return &c
}

// sqliteOnly returns a copy of m that ignores $CUSTODY_STORE: its stores
// are SQLite in their data directory.
func (m *Main) sqliteOnly() *Main { return m.withSetting("CUSTODY_STORE", "") }

// openStore opens the store $CUSTODY_STORE names, or SQLite in dir when
// it names none. PostgreSQL signs checkpoints with the key file
// $CUSTODY_SIGNING_KEY, dir/signing.key by default: every instance on one
// database must be given the same file.
func (m *Main) openStore(dir string) (dataStore, error) {
	url := m.env("CUSTODY_STORE", "")
	if url == "" {
		db, err := m.openData(dir)
		if err != nil {
			return nil, err
		}
		return db, nil
	}
	if err := checkStoreURL(url); err != nil {
		return nil, err
	}
	key := m.env("CUSTODY_SIGNING_KEY", filepath.Join(dir, "signing.key"))
	if err := os.MkdirAll(filepath.Dir(key), 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	db, err := postgres.Open(context.Background(), url, postgres.Options{KeyFile: key, Logger: m.storeLogger()})
	return db, storeError(err)
}

// openStoreReadOnly opens the store $CUSTODY_STORE names to read it,
// without its signing key; nil when it names none.
func (m *Main) openStoreReadOnly() (dataStore, error) {
	url := m.env("CUSTODY_STORE", "")
	if err := checkStoreURL(url); err != nil {
		return nil, err
	}
	db, err := postgres.Open(context.Background(), url, postgres.Options{ReadOnly: true, Logger: m.storeLogger()})
	return db, storeError(err)
}

func checkStoreURL(url string) error {
	if !strings.HasPrefix(url, "postgres://") && !strings.HasPrefix(url, "postgresql://") {
		return custody.Errorf(custody.EINVALID, "store %q: want a postgres:// URL, or none for SQLite in the data directory", redact(url))
	}
	return nil
}

// redact drops the password from a URL shown in a message.
func redact(url string) string {
	scheme, rest, ok := strings.Cut(url, "://")
	at := strings.LastIndex(rest, "@")
	if !ok || at < 0 {
		return url
	}
	user, _, _ := strings.Cut(rest[:at], ":")
	return scheme + "://" + user + "@" + rest[at+1:]
}

func (m *Main) storeLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(m.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// storeError makes a failure to open a store unavailable, saying why.
func storeError(err error) error {
	var ce *custody.Error
	if err == nil || errors.As(err, &ce) {
		return err
	}
	return &custody.Error{Kind: custody.EUNAVAILABLE, Message: fmt.Sprintf("cannot open the store: %v", err), Err: err}
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
	db, err := sqlite.Open(context.Background(), dir, opts)
	var ce *custody.Error
	if err != nil && !errors.As(err, &ce) {
		return nil, &custody.Error{Kind: custody.EUNAVAILABLE, Message: fmt.Sprintf("cannot open the store in %s: %v", dir, err), Err: err}
	}
	return db, err
}

// approvalChanges returns, for a store shared by several instances, the
// function the console's live updates listen with: its streams end with
// their request or once done ends, so that they do not hold up a
// shutdown. nil for a store of one process.
func approvalChanges(done context.Context, db dataStore) func(context.Context) (<-chan string, error) {
	l, ok := db.(interface {
		ApprovalChanges(context.Context) (<-chan string, error)
	})
	if !ok {
		return nil
	}
	return func(ctx context.Context) (<-chan string, error) {
		ctx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(done, cancel)
		context.AfterFunc(ctx, func() { stop() })
		ids, err := l.ApprovalChanges(ctx)
		if err != nil {
			cancel()
		}
		return ids, err
	}
}
