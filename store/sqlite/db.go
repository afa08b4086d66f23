// Package sqlite is the embedded default store of custody: the evidence
// ledger, the approval queue and the state documents in one SQLite database
// (pure Go driver, no cgo) inside a data directory:
//
//	custody.db            entries, signed checkpoints, approvals, state (the evidence)
//	signing.key           the ed25519 checkpoint signing key
//	signing.pub           its public half, for offline verification (every key
//	                      the ledger was signed with, oldest first)
//	ledger.id             the id of the ledger this directory keeps
//	last-checkpoint.json  the last checkpoint this directory signed
//
// The directory is 0700 and its files 0600 (see files.go); what Open
// checks of the ledger's identity is told in identity.go.
//
// Every write goes through one writer goroutine that owns the write
// connection and commits in groups: all the writes waiting when a batch
// starts share one transaction, and each Append returns only once its
// batch is durable. SQLite runs in WAL mode; the writer commits with
// synchronous=NORMAL and a syncer goroutine fsyncs the log, so that one
// batch inserts while the one before it syncs (see sync.go for why this
// keeps what synchronous=FULL promises a caller). Reads use a separate
// pool of connections and never wait for the writer.
//
// What the gateway's policy reads (approvals by trace and digest, the refs
// custody links check, budgets) is keyed state in the same database,
// written in the same transaction as the entry that justifies it (see
// Commit): the cost of a lookup does not grow with the ledger.
package sqlite

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	msqlite "modernc.org/sqlite" // also registers the "sqlite" driver

	"github.com/custody-dev/custody"
)

// DatabaseFile is the name of the database inside the data directory.
const DatabaseFile = "custody.db"

// Defaults for Options.
const (
	DefaultCheckpointEvery    = 1024
	DefaultCheckpointInterval = 10 * time.Second
	// DefaultLimit is how many entries Entries returns when the query sets
	// no limit.
	DefaultLimit = 1000
)

// busyTimeout is how long a connection waits for a lock held by another
// process (a CLI append next to a running server) before failing.
const busyTimeout = 5 * time.Second

// Options tune a DB. The zero value is ready to use.
type Options struct {
	// CheckpointEvery is how many entries may be appended before a signed
	// checkpoint is written; 0 means DefaultCheckpointEvery.
	CheckpointEvery int
	// CheckpointInterval is the longest time an appended entry waits for a
	// checkpoint; 0 means DefaultCheckpointInterval.
	CheckpointInterval time.Duration
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Origin names the ledger in its checkpoint notes (package tlog);
	// "" means "custody/ledger/" and the ledger's id.
	Origin string
	// Logger receives what the store does on its own; nil discards it.
	Logger *slog.Logger
	// ReadOnly opens the store to read and verify it: writes are refused,
	// a missing signing key is no obstacle (signing.pub verifies), and
	// the entries since the last checkpoint are left to Verify rather
	// than checked at Open.
	ReadOnly bool
	// AcceptTail accepts entries appended after the last checkpoint that
	// this data directory's writer cannot vouch for: Open records the
	// acceptance on the ledger and signs a checkpoint over them. Only an
	// operator who has looked at them should set it
	// (`custody ledger seal --accept-tail`).
	AcceptTail bool

	// noTree leaves the Merkle tree and the checkpoint notes out, so that
	// benchmarks can measure what they cost.
	noTree bool
	// fsync makes the write-ahead log durable; nil means fdatasync.
	// Tests hold it back or make it fail.
	fsync func(*os.File) error
}

func (o Options) withDefaults() Options {
	if o.CheckpointEvery <= 0 {
		o.CheckpointEvery = DefaultCheckpointEvery
	}
	if o.CheckpointInterval <= 0 {
		o.CheckpointInterval = DefaultCheckpointInterval
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// DB is the embedded store in one data directory. It is safe for concurrent
// use. Open it with Open and release it with Close.
type DB struct {
	dir  string
	opts Options
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
	// keys are every key the ledger was signed with, oldest first.
	keys []ed25519.PublicKey
	// unvouched says that entries after the last checkpoint were accepted
	// by Options.AcceptTail and the acceptance is not yet on the ledger.
	unvouched bool
	rdb       *sql.DB // read pool
	w         *writer
	// feed tells the console's event streams of approval changes.
	feed approvalFeed

	// mu guards closed and the sends on reqs, so that Close never closes
	// the channel under a sender.
	mu      sync.RWMutex
	closed  bool
	reqs    chan *request
	stopped chan struct{} // closed when the writer has exited

	// head is the receipt of the last committed entry.
	head atomic.Pointer[custody.Receipt]

	// appends holds *appendReq for Append: a request and its
	// canonicalizer's buffers, reused from one append to the next. It
	// earns its place end to end: `custody bench gateway --seconds 5
	// --rounds 2 --baseline=false`, builds with and without it alternated
	// (2026-12-01, 2 vCPU, load 2): 39,984–40,075 calls/s with it,
	// 35,923–36,487 without, 10% (an append's own benchmark does not show
	// it: the allocations it saves are paid by the callers' GC, not the
	// writer).
	appends sync.Pool
}

var (
	_ custody.Ledger        = (*DB)(nil)
	_ custody.ApprovalStore = (*DB)(nil)
	_ custody.StateStore    = (*DB)(nil)
)

// Open opens the store in dir, creating the directory (mode 0700), the
// database, its ledger id and the checkpoint signing key (signing.key,
// mode 0600) on first use, applying any pending schema migrations and
// exporting the public key to signing.pub. A database written by a newer
// custody is refused, and so is a store that is not the one this data
// directory kept, went backwards, fails its check since the last
// checkpoint, or whose ledger has entries but whose signing key is
// missing: each error says what differs (see identity.go). ctx bounds
// the opening (migrations, the check of the tail, its acceptance), not
// the store's life.
func Open(ctx context.Context, dir string, opts Options) (*DB, error) {
	opts = opts.withDefaults()
	db, err := openStore(ctx, dir, opts, false)
	if err != nil {
		return nil, err
	}
	db.start()
	if opts.AcceptTail {
		if err := db.acceptTail(ctx); err != nil {
			db.Close()
			return nil, err
		}
	}
	return db, nil
}

// openStore opens the store and checks it, starting nothing. A store
// opened for a key rotation may have no signing key.
func openStore(ctx context.Context, dir string, opts Options, rotating bool) (*DB, error) {
	if err := prepareDir(dir); err != nil {
		return nil, err
	}
	dirID, err := readDirLedgerID(dir)
	if err != nil {
		return nil, err
	}
	if err := createFiles(dir, dirID); err != nil {
		return nil, err
	}
	priv, err := readKeyIfAny(dir)
	if err != nil {
		return nil, err
	}
	db := &DB{dir: dir, opts: opts, priv: priv, reqs: make(chan *request, queueSize), stopped: make(chan struct{})}
	if err := db.open(ctx); err != nil {
		return nil, withFreeSpace(err, dir)
	}
	if err := db.establish(ctx, dirID, rotating); err != nil {
		db.abort()
		return nil, err
	}
	return db, nil
}

// start starts the goroutines of an opened store.
func (db *DB) start() {
	go db.run()
}

// abort releases a store that was opened but not started.
func (db *DB) abort() {
	db.w.close()
	db.rdb.Close()
}

// open opens the connection pools, migrates, and starts nothing yet.
func (db *DB) open(ctx context.Context) error {
	commitWithFdatasync()
	path := filepath.Join(db.dir, DatabaseFile)
	wdb, err := openWriteDB(ctx, path, db.opts.Now())
	if err != nil {
		return err
	}
	if err := removeOldIndex(db.dir, db.opts.Logger); err != nil {
		wdb.Close()
		return err
	}
	rdb, err := openReadDB(path)
	if err != nil {
		wdb.Close()
		return err
	}
	db.rdb = rdb
	w, err := newWriter(ctx, db, wdb, path)
	if err != nil {
		rdb.Close()
		wdb.Close()
		return err
	}
	db.w = w
	db.head.Store(&custody.Receipt{Seq: w.head.Seq, Hash: w.head.Hash})
	return nil
}

// commitWithFdatasync makes SQLite commit with fdatasync, as SQLite's own
// Linux builds do: it syncs the data and the size that reading it back
// needs, without a journal write for timestamps. The switch belongs to
// the driver and is process-wide; it is atomic and idempotent, so every
// open sets it again rather than this package keeping state to do it
// once. Where the platform lacks fdatasync the driver says so and fsync
// stays.
func commitWithFdatasync() {
	// The error says only that the platform lacks it: fsync stays.
	_, _ = msqlite.Fdatasync(true)
}

// dsn returns the data source name of the database at path with the
// settings every connection shares.
func dsn(path string, extra url.Values) string {
	q := url.Values{
		"_busy_timeout": {fmt.Sprint(busyTimeout.Milliseconds())},
		"_journal_mode": {"WAL"},
		"_synchronous":  {"FULL"},
	}
	for k, v := range extra {
		q[k] = v
	}
	return "file:" + filepath.ToSlash(path) + "?" + q.Encode()
}

// openWriteDB opens the single write connection and brings the schema up to
// date. Transactions on it begin IMMEDIATE: they take the write lock at once,
// so another process never makes them fail half-way. It commits with
// synchronous=NORMAL: the syncer syncs the log (see sync.go).
func openWriteDB(ctx context.Context, path string, now time.Time) (*sql.DB, error) {
	wdb, err := sql.Open("sqlite", dsn(path, url.Values{"_txlock": {"immediate"}, "_synchronous": {"NORMAL"}}))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	wdb.SetConnMaxLifetime(0)
	ms, err := loadMigrations(migrationFiles)
	if err == nil {
		err = migrate(ctx, wdb, ms, now)
	}
	if err != nil {
		wdb.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return wdb, nil
}

func openReadDB(path string) (*sql.DB, error) {
	rdb, err := sql.Open("sqlite", dsn(path, url.Values{"_query_only": {"1"}}))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	rdb.SetMaxOpenConns(n)
	rdb.SetMaxIdleConns(n)
	return rdb, nil
}

// Close drains the appends already submitted, writes a final checkpoint when
// this process appended entries since the last one, stops the writer and
// closes the database. Appends after Close fail with EUNAVAILABLE.
func (db *DB) Close() error {
	db.mu.Lock()
	already := db.closed
	if !already {
		db.closed = true
		close(db.reqs)
	}
	db.mu.Unlock()
	<-db.stopped
	if already {
		return nil
	}
	return errors.Join(db.w.close(), db.rdb.Close())
}

// publish makes r the head readers see, unless they see a later one
// already: heads of this process's batches and of other processes' appends
// can arrive out of order.
func (db *DB) publish(r custody.Receipt) {
	for {
		cur := db.head.Load()
		if cur.Seq >= r.Seq || db.head.CompareAndSwap(cur, &r) {
			return
		}
	}
}

// Dir returns the data directory.
func (db *DB) Dir() string { return db.dir }

// PublicKeyFile returns the path of the exported public key.
func (db *DB) PublicKeyFile() string { return filepath.Join(db.dir, publicKeyFile) }

// PublicKey returns the key that verifies the checkpoints.
func (db *DB) PublicKey() ed25519.PublicKey { return db.pub }

// PublicKeys returns every key the ledger's checkpoints were signed with,
// oldest first: the key in force last.
func (db *DB) PublicKeys() []ed25519.PublicKey { return db.keys }

// Size returns the number of entries on the ledger as of Head.
func (db *DB) Size() int64 { return db.head.Load().Seq }

// Commits returns how many write transactions this process has committed.
// Concurrent appends share them (group commit), so that the entries
// appended over the commits is how many shared each fsync.
func (db *DB) Commits() int64 { return db.w.batches.Load() }

// unavailable wraps a storage failure: the caller learns that the store is
// unavailable; the cause is kept for the log.
func unavailable(what string, err error) error {
	var e *custody.Error
	if errors.As(err, &e) {
		return err
	}
	return &custody.Error{
		Kind:    custody.EUNAVAILABLE,
		Message: what + ": the store is unavailable",
		Err:     err, // the message names what failed
	}
}

// errClosed is returned by writes after Close.
func errClosed(what string) error {
	return custody.Errorf(custody.EUNAVAILABLE, "%s: the store is closed", what)
}
