// Package postgres is the custody store on PostgreSQL: the evidence
// ledger, the approval queue and the state documents in one database, so
// that several gateway instances share one chain, one approval queue and
// one set of budgets.
//
// One chain across instances. Every instance has one writer that commits
// the appends waiting for it in groups, each group in one transaction
// that first locks the chain's head (the one row of ledger_head, SELECT
// ... FOR UPDATE), seals the entries against it, writes them and the
// state changes they justify, and moves the head. Instances take turns on
// that row lock, so the chain never forks, and a transaction that fails
// leaves nothing behind: neither entries nor changes nor a moved head.
// Appends that queue while an instance waits for the lock join its group.
// Conditional changes (a decision, a use of an approval, a budget) are
// conditional updates inside that transaction; an entry whose condition
// fails is rolled back to a savepoint of its own and refused alone, and the
// rest of its group commits. A group's transaction gives up the lock as
// soon as its commit is logged, and its appends are answered once a
// synchronous commit after it has flushed the log (see sync.go): an
// acknowledged append is durable on the server.
//
// Checkpoints are signed by whichever instance commits the group that
// makes one due. The ed25519 key is a file given to every instance
// (Options.KeyFile), not a row of the database: a checkpoint exists to
// catch whoever can rewrite the tables, and a key kept in those tables
// would let them sign the rewrite. The database keeps the public half
// only, so that an instance started with another key refuses to start.
//
// Each instance that writes holds a lease, a row it renews while it runs
// and deletes when it closes, and names itself in every call.started it
// commits, so that the gateway can tell the intents of a dead instance,
// which will never see their outcome, from the calls running on a live
// one (see lease.go).
//
// The schema is created and migrated by Open (schema_migrations holds the
// version); a database with a schema newer than this custody knows is
// refused. The tables live in the connection's search_path, so that one
// database can hold several ledgers, one per schema.
package postgres

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/custody-dev/custody"
)

// defaultMaxConns is the size of an instance's connection pool unless
// the URL sets pool_max_conns.
const defaultMaxConns = 16

// Defaults for Options.
const (
	DefaultCheckpointEvery    = 1024
	DefaultCheckpointInterval = 10 * time.Second
	// DefaultLimit is how many entries Entries returns when the query
	// sets no limit.
	DefaultLimit = 1000
)

// Options tune a DB.
type Options struct {
	// KeyFile is the ed25519 checkpoint signing key (PEM, mode 0600),
	// created on first use; every instance sharing a database must be
	// given the same file. Its public half is written beside it, with
	// the extension .pub. Required.
	KeyFile string
	// CheckpointEvery is how many entries may be appended before a signed
	// checkpoint is written; 0 means DefaultCheckpointEvery.
	CheckpointEvery int
	// CheckpointInterval is the longest time an appended entry waits for
	// a checkpoint; 0 means DefaultCheckpointInterval.
	CheckpointInterval time.Duration
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Logger receives what the store does on its own; nil discards it.
	Logger *slog.Logger
	// ReadOnly opens an existing ledger to read and verify it: no key
	// file, no migration, no lease, every write refused. ENOTFOUND when
	// the database holds no ledger.
	ReadOnly bool
	// Heartbeat is how often the instance renews its lease (lease.go),
	// which lasts LeaseBeats heartbeats; 0 means DefaultHeartbeat.
	Heartbeat time.Duration
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
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// DB is one instance's handle on the shared store. It is safe for
// concurrent use. Open it with Open and release it with Close.
type DB struct {
	opts Options
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
	// ledgerID is the ledger's id, named in every checkpoint.
	ledgerID string
	pool     *pgxpool.Pool
	w        *writer

	// mu guards closed and the sends on reqs, so that Close never closes
	// the channel under a sender.
	mu      sync.RWMutex
	closed  bool
	reqs    chan *request
	stopped chan struct{} // closed when the writer has exited
	// poolOnce closes the pool once.
	poolOnce sync.Once

	// head is the last head this instance saw committed.
	head atomic.Pointer[custody.Receipt]
	// channel is where changes of approvals are notified (notify.go).
	channel string

	// instance names this instance's lease and its intents (lease.go);
	// beatStop stops the heartbeat that renews the lease, which closes
	// beatDone as it exits. Both are nil without a lease (ReadOnly).
	instance           string
	beatStop, beatDone chan struct{}
}

var _ custody.Store = (*DB)(nil)

// Open connects to the database at url (postgres://...), creates or
// migrates the schema, checks the signing key against the one the ledger
// was started with, and starts this instance's writer. With
// Options.ReadOnly it only reads an existing ledger.
func Open(ctx context.Context, url string, opts Options) (*DB, error) {
	opts = opts.withDefaults()
	var priv ed25519.PrivateKey
	if !opts.ReadOnly {
		var err error
		if priv, err = loadKey(opts.KeyFile); err != nil {
			return nil, err
		}
	}
	pool, err := connect(ctx, url)
	if err != nil {
		return nil, err
	}
	db := &DB{opts: opts, priv: priv, pool: pool, reqs: make(chan *request, queueSize), stopped: make(chan struct{}), instance: newInstanceID()}
	db.w = &writer{db: db}
	db.head.Store(&custody.Receipt{})
	if opts.ReadOnly {
		err = db.openReadOnly(ctx)
	} else {
		err = db.open(ctx)
	}
	if err != nil {
		pool.Close()
		return nil, err
	}
	if opts.ReadOnly {
		db.closed = true // every write is refused
		close(db.stopped)
		return db, nil
	}
	go db.run()
	return db, nil
}

// connect opens the connection pool.
func connect(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, custody.Errorf(custody.EINVALID, "postgres: %v", err)
	}
	// An acknowledged append must be durable whatever the server's
	// default says (a group's own transaction turns it off: see sync.go).
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	if !strings.Contains(url, "pool_max_conns") {
		// The writer and its barrier hold two connections; the
		// gateway's keyed reads, one or two a call, share the rest.
		cfg.MaxConns = max(cfg.MaxConns, defaultMaxConns)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, unavailable("connect", err)
	}
	return pool, nil
}

func (db *DB) open(ctx context.Context) error {
	ms, err := loadMigrations(migrationFiles)
	if err != nil {
		return err
	}
	if err := migrate(ctx, db.pool, ms, db.opts.Now()); err != nil {
		return unavailable("migrate the schema", err)
	}
	db.pub = db.priv.Public().(ed25519.PublicKey)
	if err := checkKey(ctx, db.pool, db.pub); err != nil {
		return err
	}
	if db.ledgerID, err = ensureLedgerID(ctx, db.pool); err != nil {
		return err
	}
	db.channel = approvalChannel(db.schema(ctx))
	if _, err = db.Head(ctx); err != nil {
		return err
	}
	return db.takeLease(ctx)
}

// openReadOnly checks that the database holds a ledger of the schema this
// custody knows, and reads its public key and id.
func (db *DB) openReadOnly(ctx context.Context) error {
	ms, err := loadMigrations(migrationFiles)
	if err != nil {
		return err
	}
	v, err := schemaVersion(ctx, db.pool)
	switch {
	case err != nil:
		return unavailable("read the schema version", err)
	case v == 0:
		return custody.Errorf(custody.ENOTFOUND, "no custody ledger in this database (schema %s)", db.schema(ctx))
	case v != len(ms):
		return custody.Errorf(custody.EUNAVAILABLE, "the database has schema version %d, this custody reads %d: run the custody that serves it", v, len(ms))
	}
	if db.pub, err = storedKey(ctx, db.pool); err != nil {
		return err
	}
	if db.ledgerID, err = readLedgerID(ctx, db.pool); err != nil {
		return err
	}
	db.channel = approvalChannel(db.schema(ctx))
	_, err = db.Head(ctx)
	return err
}

// schema names the schema the tables are in, for messages.
func (db *DB) schema(ctx context.Context) string {
	var s *string
	if err := db.pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&s); err != nil || s == nil {
		return "?"
	}
	return *s
}

// Close drains the appends already submitted, writes a final checkpoint
// when this instance appended entries the last checkpoint does not cover,
// stops the writer, deletes the instance's lease (its intents still open
// are orphans from then on: see lease.go) and closes the connections.
// Appends after Close fail with EUNAVAILABLE.
func (db *DB) Close() error {
	db.mu.Lock()
	already := db.closed
	if !already {
		db.closed = true
		close(db.reqs)
	}
	db.mu.Unlock()
	<-db.stopped
	if !already {
		db.endLease()
	}
	db.poolOnce.Do(db.pool.Close)
	return nil
}

// PublicKey returns the key that verifies the checkpoints.
func (db *DB) PublicKey() ed25519.PublicKey { return db.pub }

// PublicKeyFile returns the path of the exported public key; "" when
// opened read-only.
func (db *DB) PublicKeyFile() string {
	if db.opts.ReadOnly {
		return ""
	}
	return publicKeyFile(db.opts.KeyFile)
}

// Size returns the number of entries on the ledger as this instance last
// saw it (its own commits, and Head).
func (db *DB) Size() int64 { return db.head.Load().Seq }

// Commits returns how many write transactions this instance has
// committed. Concurrent appends share them (group commit).
func (db *DB) Commits() int64 { return db.w.batches.Load() }

// publish makes r the head Size reports, unless a later one is known.
func (db *DB) publish(r custody.Receipt) {
	for {
		cur := db.head.Load()
		if cur.Seq >= r.Seq || db.head.CompareAndSwap(cur, &r) {
			return
		}
	}
}

// unavailable wraps a storage failure: the caller learns that the store
// is unavailable; the cause is kept for the log. A nil err stays nil, a
// *custody.Error as it is.
func unavailable(what string, err error) error {
	if err == nil {
		return nil
	}
	var e *custody.Error
	if errors.As(err, &e) {
		return err
	}
	return &custody.Error{Kind: custody.EUNAVAILABLE, Message: what + ": the store is unavailable", Err: fmt.Errorf("%s: %w", what, err)}
}

// errClosed is returned by writes after Close.
func errClosed(what string) error {
	return custody.Errorf(custody.EUNAVAILABLE, "%s: the store is closed", what)
}

// PublicKeys returns the keys that verify the checkpoints, oldest first:
// the one key of a PostgreSQL store.
func (db *DB) PublicKeys() []ed25519.PublicKey { return []ed25519.PublicKey{db.pub} }

// LedgerID returns the ledger's id.
func (db *DB) LedgerID() string { return db.ledgerID }
