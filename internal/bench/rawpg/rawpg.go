// Package rawpg is the bar the PostgreSQL store's append path is measured
// against: what PostgreSQL alone does with the same rows, inserted the way
// the store inserts them, with no validation, sealing, hashing or state.
// GroupCommit is one writer with no head lock; HeadLocked is the floor of
// the store's design, several writers committing each group under the
// chain head's lock as the store's do.
package rawpg

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/queue"
)

// The store's writer's sizes (postgres/writer.go): how many inserts may
// wait, and how many share one transaction at most.
const (
	queueSize = 4096
	maxBatch  = 1024
)

// barrierSQL is the store's durability barrier (postgres/sync.go): a
// synchronous commit that writes to the log, so that the server flushes
// the log up to it.
const barrierSQL = `SELECT pg_logical_emit_message(true, 'custody', 'barrier')::text`

// entriesTable is the store's entries table (postgres/migrations).
const entriesTable = `CREATE TABLE entries (seq bigint PRIMARY KEY, at text NOT NULL, kind text NOT NULL,
	trace text NOT NULL, actor text NOT NULL, refs text NOT NULL, body bytea NOT NULL,
	body_sha256 text NOT NULL, prev text NOT NULL, hash text NOT NULL)`

// ScratchSchema creates an empty schema in the database at dsn, for a
// benchmark to run in apart from any ledger there, and returns dsn with
// that schema as its search_path and the function that drops it.
func ScratchSchema(ctx context.Context, dsn, prefix string) (scratch string, drop func() error, err error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", nil, custody.Errorf(custody.EINVALID, "postgres: %v", err)
	}
	schema := prefix + "_" + strings.ToLower(rand.Text()[:12])
	if err := execOnce(ctx, dsn, `CREATE SCHEMA `+schema); err != nil {
		return "", nil, err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	drop = func() error { return execOnce(context.Background(), dsn, `DROP SCHEMA `+schema+` CASCADE`) }
	return u.String(), drop, nil
}

// execOnce runs sql on a connection of its own.
func execOnce(ctx context.Context, dsn, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("baseline: connect: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("baseline: %s: %w", sql, err)
	}
	return nil
}

// connect opens a pool as the store does (postgres/db.go): every commit
// synchronous unless a transaction turns it off.
func connect(ctx context.Context, dsn string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, custody.Errorf(custody.EINVALID, "postgres: %v", err)
	}
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("baseline: connect: %w", err)
	}
	return pool, nil
}

// GroupCommit runs load against what PostgreSQL alone does: in a scratch
// schema of the database at dsn, with a table shaped like the ledger's,
// one writer goroutine commits the inserts waiting for it in groups, each
// group one INSERT in a transaction of its own (a single round trip, with
// synchronous_commit on), and the Group's Insert returns once its row is
// durable. With pipelined, each group commits asynchronously and is
// acknowledged after a barrier, as the store's groups are, so that the
// two can be told apart. The schema is dropped afterwards.
func GroupCommit(ctx context.Context, dsn string, pipelined bool, load func(g *Group) error) error {
	scratch, drop, err := ScratchSchema(ctx, dsn, "custody_raw")
	if err != nil {
		return err
	}
	defer drop()
	pool, err := connect(ctx, scratch)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, entriesTable); err != nil {
		return fmt.Errorf("baseline: create the table: %w", err)
	}
	reqs := make(chan *insert, queueSize)
	g := &Group{ctx: ctx, reqs: reqs}
	var loop sync.WaitGroup
	if pipelined {
		acks := make(chan []*insert, queueSize)
		g.acks = acks
		loop.Go(func() { barriers(ctx, pool, acks) })
	}
	loop.Go(func() { g.write(pool, reqs) })
	defer loop.Wait()
	defer close(reqs)
	return load(g)
}

// Group is the raw group commit that GroupCommit hands its load. It is
// safe for concurrent use until the load returns.
type Group struct {
	ctx           context.Context
	reqs          chan<- *insert
	rows, commits atomic.Int64
	// acks takes committed groups to their barrier when pipelined; nil
	// when each commit flushes.
	acks chan<- []*insert
}

type insert struct {
	e    custody.Entry
	err  error
	done chan struct{}
}

// Insert puts a row shaped like e in the scratch table and returns once
// it is durable.
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
// many transactions.
func (g *Group) Committed() (rows, commits int64) {
	return g.rows.Load(), g.commits.Load()
}

// barriers acknowledges the committed groups once a synchronous commit
// after them has flushed the log, until acks is closed. The groups
// waiting when a barrier begins share it.
func barriers(ctx context.Context, pool *pgxpool.Pool, acks <-chan []*insert) {
	buf := make([][]*insert, 0, 64)
	for a := range acks {
		buf = queue.Drain(append(buf[:0], a), acks, cap(buf))
		var lsn string
		err := pool.QueryRow(ctx, barrierSQL).Scan(&lsn)
		for _, group := range buf {
			for _, r := range group {
				if r.err == nil {
					r.err = err
				}
				close(r.done)
			}
		}
		clear(buf)
	}
}

// write commits the waiting inserts in groups until reqs is closed. The
// rows get made-up seqs, prevs and hashes: the baseline does no sealing.
func (g *Group) write(pool *pgxpool.Pool, reqs <-chan *insert) {
	if g.acks != nil {
		defer close(g.acks)
	}
	var seq int64
	buf := make([]*insert, 0, maxBatch)
	for r := range reqs {
		buf = queue.Gather(append(buf[:0], r), reqs, maxBatch)
		for _, r := range buf {
			seq++
			r.e.Seq, r.e.Prev, r.e.Hash, r.e.BodySHA256 = seq, "", strconv.FormatInt(seq, 10), ""
		}
		err := g.commit(pool, buf)
		for _, r := range buf {
			r.err = err
		}
		if err == nil && g.acks != nil {
			g.acks <- slices.Clone(buf)
		} else {
			for _, r := range buf {
				close(r.done)
			}
		}
		clear(buf)
	}
}

// commit inserts one group in one round trip.
func (g *Group) commit(pool *pgxpool.Pool, group []*insert) error {
	var q pgx.Batch
	if g.acks != nil {
		q.Queue(`BEGIN`)
		q.Queue(`SET LOCAL synchronous_commit = off`)
	}
	queueInsert(&q, group)
	if g.acks != nil {
		q.Queue(`COMMIT`)
	}
	err := pool.SendBatch(g.ctx, &q).Close()
	if err == nil {
		g.rows.Add(int64(len(group)))
		g.commits.Add(1)
	}
	return err
}
