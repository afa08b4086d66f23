// Package sqlite is the embedded default store of custody: the evidence
// ledger, the approval queue and the state documents in one SQLite database
// (pure Go driver, no cgo) inside a data directory:
//
//	custody.db    entries, signed checkpoints, approvals, state (the evidence)
//	index.db      lookups by trace, kind and ref (derived; rebuilt at will)
//	signing.key   the ed25519 checkpoint signing key (mode 0600)
//	signing.pub   its public half, for offline verification
//
// Every write goes through one writer goroutine that owns the write
// connection and commits in groups: all the writes waiting when a batch
// starts share one transaction, and each Append returns only once its
// batch is durable. SQLite runs in WAL mode; the writer commits with
// synchronous=NORMAL and a syncer goroutine fsyncs the log, so that one
// batch inserts while the one before it syncs (see sync.go for why this
// keeps what synchronous=FULL promises a caller). Reads use a separate
// pool of connections and never wait for the writer. Entries are indexed
// for lookups by a third goroutine once they are durable.
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

	_ "modernc.org/sqlite" // registers the "sqlite" driver

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
	// "" means one derived from the signing key.
	Origin string
	// Logger receives what the store does on its own that takes long,
	// such as rebuilding the lookup index; nil discards it.
	Logger *slog.Logger

	// indexChunkKeys is how many keys a chunk of the index holds; 0
	// means chunkKeys. Tests set it small.
	indexChunkKeys int
	// mergeHook, when set, runs in the index's merger before it installs
	// a merge. Tests hold a merge back with it.
	mergeHook func()
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
	rdb  *sql.DB // read pool
	lk   *lookups
	w    *writer

	// mu guards closed and the sends on reqs, so that Close never closes
	// the channel under a sender.
	mu      sync.RWMutex
	closed  bool
	reqs    chan *request
	stopped chan struct{} // closed when the writer has exited

	// head is the receipt of the last committed entry.
	head atomic.Pointer[custody.Receipt]

	// appends holds *appendReq for Append.
	appends sync.Pool
}

var (
	_ custody.Ledger        = (*DB)(nil)
	_ custody.ApprovalStore = (*DB)(nil)
	_ custody.StateStore    = (*DB)(nil)
)

// Open opens the store in dir, creating the directory (mode 0700), the
// database and the checkpoint signing key (signing.key, mode 0600) on first
// use, applying any pending schema migrations and exporting the public key
// to signing.pub. A database written by a newer custody is refused.
func Open(dir string, opts Options) (*DB, error) {
	opts = opts.withDefaults()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	priv, err := loadKey(dir)
	if err != nil {
		return nil, err
	}
	opts.Origin = originOf(opts, priv.Public().(ed25519.PublicKey))
	db := &DB{
		dir: dir, opts: opts, priv: priv, pub: priv.Public().(ed25519.PublicKey),
		reqs: make(chan *request, queueSize), stopped: make(chan struct{}),
	}
	if err := db.open(); err != nil {
		return nil, withFreeSpace(err, dir)
	}
	go db.lk.run(db.rdb)
	go db.run()
	return db, nil
}

// open opens the connection pools and the index, migrates, and starts
// nothing yet.
func (db *DB) open() error {
	ctx := context.Background()
	path := filepath.Join(db.dir, DatabaseFile)
	wdb, err := openWriteDB(ctx, path, db.opts.Now(), syncNormal)
	if err != nil {
		return err
	}
	lk, err := openLookups(ctx, db.dir, wdb, db.opts)
	if err != nil {
		wdb.Close()
		return err
	}
	rdb, err := openReadDB(path)
	if err != nil {
		lk.close()
		wdb.Close()
		return err
	}
	db.rdb, db.lk = rdb, lk
	w, err := newWriter(ctx, db, wdb, path)
	if err != nil {
		rdb.Close()
		lk.close()
		wdb.Close()
		return err
	}
	db.w = w
	db.head.Store(&custody.Receipt{Seq: w.head.Seq, Hash: w.head.Hash})
	return nil
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
// so another process never makes them fail half-way.
func openWriteDB(ctx context.Context, path string, now time.Time, sync string) (*sql.DB, error) {
	wdb, err := sql.Open("sqlite", dsn(path, url.Values{"_txlock": {"immediate"}, "_synchronous": {sync}}))
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
	<-db.lk.stopped
	if already {
		return nil
	}
	return errors.Join(db.w.close(), db.lk.close(), db.rdb.Close())
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
