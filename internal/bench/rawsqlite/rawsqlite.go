// Package rawsqlite is the bar the SQLite store's append path is measured
// against: what SQLite alone does with the same rows, written the way the
// store writes them, with no validation, sealing, hashing or indexing.
package rawsqlite

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/queue"
	"github.com/custody-dev/custody/store/sqlite"
)

// The store's writer's sizes (sqlite/writer.go): how many inserts may
// wait, and how many share one transaction at most.
const (
	queueSize = 4096
	maxBatch  = 1024
)

// scratchDir is the data directory GroupCommit makes its database in.
const scratchDir = "raw-baseline"

// Sync is how GroupCommit makes its commits durable.
type Sync int

const (
	// SyncFull lets SQLite fsync the log at every commit
	// (synchronous=FULL): a row is acknowledged once its commit returns.
	// It is what SQLite alone does, and the default bar.
	SyncFull Sync = iota
	// SyncPipelined commits the way the store does: with
	// synchronous=NORMAL, the log fsynced by a second goroutine while the
	// next batch inserts, a row acknowledged once an fsync that began
	// after its commit returns.
	SyncPipelined
)

// String names the mode as the bench command's flag does.
func (m Sync) String() string {
	if m == SyncPipelined {
		return "pipelined"
	}
	return "full"
}

// pragma returns the write connection's synchronous setting.
func (m Sync) pragma() string {
	if m == SyncPipelined {
		return "NORMAL"
	}
	return "FULL"
}

// GroupCommit runs load against what the database alone can do. It makes
// a store in a scratch data directory in dir with sqlite.Open and closes
// it, so that the table the rows go into is the one the store's own
// migrations make (and the driver commits with fdatasync, as the store
// sets it), then writes to that database as the store's writer does: WAL,
// one write connection that takes the lock at once, synchronous as mode
// says, the store's multi-row INSERT OR FAIL statements (insert.go),
// group commit. load gets a Group whose Insert puts a row shaped like an
// entry on it and returns once the row is durable. The scratch directory
// is removed afterwards.
func GroupCommit(ctx context.Context, dir string, mode Sync, load func(g *Group) error) error {
	data := filepath.Join(dir, scratchDir)
	defer os.RemoveAll(data)
	path, err := makeStore(ctx, data)
	if err != nil {
		return err
	}
	conn, err := openWrite(path, mode)
	if err != nil {
		return err
	}
	defer conn.Close()
	var seq int64
	if err := conn.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM entries`).Scan(&seq); err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	ins, err := prepareInsert(ctx, conn)
	if err != nil {
		return err
	}
	defer ins.close()
	return run(ctx, conn, ins, path, mode, seq, load)
}

// run starts the writer (and, pipelined, the syncer) and runs load.
func run(ctx context.Context, conn *sql.DB, ins *insertStmts, path string, mode Sync, seq int64, load func(g *Group) error) error {
	reqs := make(chan *insert, queueSize)
	g := &Group{ctx: ctx, reqs: reqs}
	var loop sync.WaitGroup
	if mode == SyncPipelined {
		g.sync = newSyncer(path)
		defer g.sync.close()
		loop.Go(func() { g.sync.run(g.durable) })
	}
	loop.Go(func() { g.write(conn, ins, reqs, seq) })
	defer loop.Wait()
	defer close(reqs)
	return load(g)
}

// makeStore makes a store in data and returns the path of its database.
func makeStore(ctx context.Context, data string) (string, error) {
	if err := os.RemoveAll(data); err != nil {
		return "", fmt.Errorf("baseline: %w", err)
	}
	db, err := sqlite.Open(ctx, data, sqlite.Options{})
	if err != nil {
		return "", fmt.Errorf("baseline: %w", err)
	}
	if err := db.Close(); err != nil {
		return "", fmt.Errorf("baseline: %w", err)
	}
	return filepath.Join(data, sqlite.DatabaseFile), nil
}

// openWrite opens the single write connection with the store's settings
// (sqlite/db.go): WAL, a busy timeout, transactions that begin
// IMMEDIATE.
func openWrite(path string, mode Sync) (*sql.DB, error) {
	q := url.Values{
		"_busy_timeout": {"5000"},
		"_journal_mode": {"WAL"},
		"_synchronous":  {mode.pragma()},
		"_txlock":       {"immediate"},
	}
	conn, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path)+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("baseline: open %s: %w", path, err)
	}
	conn.SetMaxOpenConns(1)
	conn.SetMaxIdleConns(1)
	conn.SetConnMaxLifetime(0)
	return conn, nil
}

// Group is the raw group commit that GroupCommit hands its load. It is
// safe for concurrent use until the load returns.
type Group struct {
	ctx           context.Context
	reqs          chan<- *insert
	rows, commits atomic.Int64
	// sync acknowledges the committed batches when pipelined; nil when
	// each commit syncs.
	sync *syncer
}

// insert is one row waiting for the raw writer.
type insert struct {
	e    custody.Entry
	err  error
	done chan struct{}
}

// Insert puts a row shaped like e on the scratch database and returns
// once it is durable.
func (g *Group) Insert(e custody.Entry) error {
	r := &insert{e: e, done: make(chan struct{})}
	select {
	case g.reqs <- r:
	case <-g.ctx.Done():
		return g.ctx.Err()
	}
	<-r.done
	return r.err
}

// Committed returns how many rows the raw writer has committed, in how
// many transactions: rows over commits is how many shared each fsync.
func (g *Group) Committed() (rows, commits int64) {
	return g.rows.Load(), g.commits.Load()
}

// write is the store's writer loop without the ledger: drain, insert,
// commit, acknowledge (or, pipelined, hand the batch to the syncer). The
// rows get the seqs after the store's last and made-up digests: the
// baseline does no sealing.
func (g *Group) write(conn *sql.DB, ins *insertStmts, reqs <-chan *insert, seq int64) {
	if g.sync != nil {
		defer close(g.sync.queue)
	}
	taken := make([]*insert, 0, maxBatch)
	entries := make([]*custody.Entry, 0, maxBatch)
	for r := range reqs {
		taken = queue.Gather(append(taken[:0], r), reqs, maxBatch)
		entries = entries[:0]
		for _, r := range taken {
			seq++
			r.e.Seq = seq
			entries = append(entries, &r.e)
		}
		err := commit(g.ctx, conn, ins, entries)
		if err == nil && g.sync != nil {
			g.sync.queue <- slices.Clone(taken)
			continue
		}
		g.durable([][]*insert{taken}, err)
	}
}

// durable acknowledges committed batches once they are durable, or fails
// them with err.
func (g *Group) durable(batches [][]*insert, err error) {
	for _, b := range batches {
		if err == nil {
			g.rows.Add(int64(len(b)))
			g.commits.Add(1)
		}
		for _, r := range b {
			r.err = err
			close(r.done)
		}
	}
}

func commit(ctx context.Context, conn *sql.DB, ins *insertStmts, entries []*custody.Entry) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	if err := ins.insert(ctx, tx, entries); err != nil {
		tx.Rollback()
		return fmt.Errorf("baseline: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	return nil
}
