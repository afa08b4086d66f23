package postgres

import (
	"context"
	"crypto/rand"
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
		return unavailable("connect", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql); err != nil {
		return unavailable(sql, err)
	}
	return nil
}

// RawGroupCommit runs load against what PostgreSQL alone does: in a
// scratch schema of the database at dsn, with a table shaped like the
// ledger's, one writer goroutine commits the inserts waiting for it in
// groups, each group one INSERT in a transaction of its own (a single
// round trip, with synchronous_commit on), and the RawGroup's Insert
// returns once its row is durable. No validation, sealing, hashing, head
// lock or state: the bar the store's append path is measured against. With
// pipelined, each group commits asynchronously and is acknowledged after
// a barrier, as the store's groups are (see sync.go), so that the two can
// be told apart. The schema is dropped afterwards.
func RawGroupCommit(ctx context.Context, dsn string, pipelined bool, load func(g *RawGroup) error) error {
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
	const table = `CREATE TABLE entries (seq bigint PRIMARY KEY, at text NOT NULL, kind text NOT NULL,
		trace text NOT NULL, actor text NOT NULL, refs text NOT NULL, body bytea NOT NULL,
		body_sha256 text NOT NULL, prev text NOT NULL, hash text NOT NULL)`
	if _, err := pool.Exec(ctx, table); err != nil {
		return unavailable("create the baseline table", err)
	}
	reqs := make(chan *rawInsert, queueSize)
	g := &RawGroup{ctx: ctx, reqs: reqs}
	var loop sync.WaitGroup
	if pipelined {
		acks := make(chan []*rawInsert, queueSize)
		g.acks = acks
		loop.Go(func() { g.barriers(pool, acks) })
	}
	loop.Go(func() { g.write(pool, reqs) })
	defer loop.Wait()
	defer close(reqs)
	return load(g)
}

// barriers acknowledges the committed groups once a synchronous commit
// after them has flushed the log, until acks is closed.
func (g *RawGroup) barriers(pool *pgxpool.Pool, acks <-chan []*rawInsert) {
	buf := make([][]*rawInsert, 0, 64)
	for a := range acks {
		buf = queue.Drain(append(buf[:0], a), acks, cap(buf))
		var lsn string
		err := pool.QueryRow(g.ctx, barrierSQL).Scan(&lsn)
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

// RawGroup is the raw group commit that RawGroupCommit hands its load.
// It is safe for concurrent use until the load returns.
type RawGroup struct {
	ctx           context.Context
	reqs          chan<- *rawInsert
	rows, commits atomic.Int64
	// acks takes committed groups to their barrier when pipelined; nil
	// when each commit flushes.
	acks chan<- []*rawInsert
}

type rawInsert struct {
	e    custody.Entry
	err  error
	done chan struct{}
}

// Insert puts a row shaped like e in the scratch table and returns once
// it is durable.
func (g *RawGroup) Insert(e custody.Entry) error {
	r := &rawInsert{e: e, done: make(chan struct{})}
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
func (g *RawGroup) Committed() (rows, commits int64) {
	return g.rows.Load(), g.commits.Load()
}

// write commits the waiting inserts in groups until reqs is closed. The
// rows get made-up seqs, prevs and hashes: the baseline does no sealing.
func (g *RawGroup) write(pool *pgxpool.Pool, reqs <-chan *rawInsert) {
	var seq int64
	buf := make([]*rawInsert, 0, maxBatch)
	entries := make([]*custody.Entry, 0, maxBatch)
	for r := range reqs {
		buf = queue.Gather(append(buf[:0], r), reqs, maxBatch)
		entries = entries[:0]
		for _, r := range buf {
			seq++
			r.e.Seq, r.e.Prev, r.e.Hash, r.e.BodySHA256 = seq, "", strconv.FormatInt(seq, 10), ""
			entries = append(entries, &r.e)
		}
		var q pgx.Batch
		if g.acks != nil {
			q.Queue(`BEGIN`)
			q.Queue(`SET LOCAL synchronous_commit = off`)
		}
		queueInsert(&q, entries)
		if g.acks != nil {
			q.Queue(`COMMIT`)
		}
		err := pool.SendBatch(g.ctx, &q).Close()
		if err == nil {
			g.rows.Add(int64(len(buf)))
			g.commits.Add(1)
		}
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
	if g.acks != nil {
		close(g.acks)
	}
}
