package rawpg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/queue"
)

// commitTimeout bounds one group's transaction, as the store's writer's
// does (postgres/writer.go).
const commitTimeout = 30 * time.Second

// The store's chain head (postgres/migrations): one row, which every
// group's transaction locks.
const (
	headTable = `CREATE TABLE ledger_head (id integer PRIMARY KEY CHECK (id = 1), seq bigint NOT NULL,
	hash text NOT NULL, checkpoint_size bigint NOT NULL, pending_since timestamptz)`
	headRowSQL  = `INSERT INTO ledger_head (id, seq, hash, checkpoint_size) VALUES (1, 0, '', 0)`
	lockHeadSQL = `SELECT seq, hash, checkpoint_size, pending_since FROM ledger_head WHERE id = 1 FOR UPDATE`
	moveHeadSQL = `UPDATE ledger_head SET seq = $1, hash = $2, checkpoint_size = $3, pending_since = $4 WHERE id = 1`
)

// HeadLocked runs load against the floor of the store's own design: what
// PostgreSQL alone does when writers writers, each with a pool of its
// own as a gateway instance has, commit the inserts waiting for them in
// groups on one chain. In a scratch schema with the store's entries and
// ledger_head tables, each group is committed as the store's writer
// commits one (postgres/writer.go, sync.go): BEGIN with the head's row
// lock in one round trip, then the group's INSERT, the head's move and
// an asynchronous COMMIT in another, and its inserts return once a
// barrier after it has flushed the log. There is no validation, sealing,
// hashing, checkpoint or state. Insert k goes to writer k modulo
// writers. The schema is dropped afterwards.
func HeadLocked(ctx context.Context, dsn string, writers int, load func(f *Floor) error) error {
	if writers < 1 {
		return custody.Errorf(custody.EINVALID, "floor: %d writers: want at least one", writers)
	}
	scratch, drop, err := ScratchSchema(ctx, dsn, "custody_floor")
	if err != nil {
		return err
	}
	defer drop()
	return headLockedIn(ctx, scratch, writers, load)
}

// headLockedIn is HeadLocked in the schema dsn searches, which it leaves
// behind.
func headLockedIn(ctx context.Context, dsn string, writers int, load func(f *Floor) error) error {
	if err := execOnce(ctx, dsn, headTable); err != nil {
		return err
	}
	if err := execOnce(ctx, dsn, headRowSQL); err != nil {
		return err
	}
	if err := execOnce(ctx, dsn, entriesTable); err != nil {
		return err
	}
	f := &Floor{ctx: ctx}
	var loops sync.WaitGroup
	defer loops.Wait()
	for range writers {
		pool, err := connect(ctx, dsn)
		if err != nil {
			return err
		}
		w := &headWriter{f: f, pool: pool, reqs: make(chan *insert, queueSize)}
		acks := make(chan []*insert, queueSize)
		loops.Go(func() {
			defer pool.Close()
			var barrier sync.WaitGroup
			barrier.Go(func() { barriers(ctx, pool, acks) })
			w.run(acks)
			barrier.Wait()
		})
		defer close(w.reqs)
		f.writers = append(f.writers, w)
	}
	return load(f)
}

// Floor is the head-locked group commit that HeadLocked hands its load.
// It is safe for concurrent use until the load returns.
type Floor struct {
	ctx           context.Context
	writers       []*headWriter
	next          atomic.Int64
	rows, commits atomic.Int64
}

// Insert puts a row shaped like e on the floor's chain, through the next
// writer in turn, and returns once it is durable.
func (f *Floor) Insert(e custody.Entry) error {
	w := f.writers[int(f.next.Add(1)-1)%len(f.writers)]
	r := &insert{e: e, done: make(chan struct{})}
	select {
	case w.reqs <- r:
	case <-f.ctx.Done():
		return f.ctx.Err()
	}
	<-r.done
	return r.err
}

// Committed returns how many rows the floor's writers have committed, in
// how many transactions.
func (f *Floor) Committed() (rows, commits int64) {
	return f.rows.Load(), f.commits.Load()
}

// headWriter is one of the floor's writers: an instance's writer with
// nothing but the head's lock and the inserts.
type headWriter struct {
	f    *Floor
	pool *pgxpool.Pool
	reqs chan *insert
}

// run commits the waiting inserts in groups, and hands each committed
// group to its barrier on acks, until reqs is closed.
func (w *headWriter) run(acks chan<- []*insert) {
	defer close(acks)
	buf := make([]*insert, 0, maxBatch)
	for r := range w.reqs {
		var err error
		buf, err = w.commit(queue.Gather(append(buf[:0], r), w.reqs, maxBatch))
		if err == nil {
			w.f.rows.Add(int64(len(buf)))
			w.f.commits.Add(1)
			acks <- slices.Clone(buf)
		} else {
			for _, r := range buf {
				r.err = err
				close(r.done)
			}
		}
		clear(buf)
	}
}

// head is the chain's head row as a group's transaction holds it.
type head struct {
	seq, checkpointSize int64
	hash                string
	pendingSince        *time.Time
}

// commit commits group in one transaction under the head's lock, in the
// store's two round trips, and returns the group with the inserts that
// queued while it waited for the lock.
func (w *headWriter) commit(group []*insert) ([]*insert, error) {
	ctx, cancel := context.WithTimeout(w.f.ctx, commitTimeout)
	defer cancel()
	pc, err := w.pool.Acquire(ctx)
	if err != nil {
		return group, fmt.Errorf("floor: connect: %w", err)
	}
	defer pc.Release()
	conn := pc.Conn()
	var h head
	if err := beginLocked(ctx, conn, &h); err != nil {
		rollback(conn)
		return group, err
	}
	group = queue.Drain(group, w.reqs, maxBatch)
	if err := writeGroup(ctx, conn, &h, group); err != nil {
		rollback(conn)
		return group, err
	}
	return group, nil
}

// beginLocked begins a transaction that commits asynchronously and locks
// the head in it, in one round trip.
func beginLocked(ctx context.Context, conn *pgx.Conn, h *head) error {
	var q pgx.Batch
	q.Queue(`BEGIN`)
	q.Queue(`SET LOCAL synchronous_commit = off`)
	q.Queue(lockHeadSQL).QueryRow(func(row pgx.Row) error {
		err := row.Scan(&h.seq, &h.hash, &h.checkpointSize, &h.pendingSince)
		if errors.Is(err, pgx.ErrNoRows) {
			return errors.New("the ledger_head row is missing")
		}
		return err
	})
	if err := conn.SendBatch(ctx, &q).Close(); err != nil {
		return fmt.Errorf("floor: lock the head: %w", err)
	}
	return nil
}

// writeGroup chains group after h with made-up hashes, then inserts it,
// moves the head and commits, in one round trip.
func writeGroup(ctx context.Context, conn *pgx.Conn, h *head, group []*insert) error {
	for _, r := range group {
		h.seq++
		r.e.Seq, r.e.Prev, r.e.Hash, r.e.BodySHA256 = h.seq, h.hash, strconv.FormatInt(h.seq, 10), ""
		h.hash = r.e.Hash
	}
	if h.seq > h.checkpointSize && h.pendingSince == nil {
		now := time.Now()
		h.pendingSince = &now
	}
	var q pgx.Batch
	queueInsert(&q, group)
	q.Queue(moveHeadSQL, h.seq, h.hash, h.checkpointSize, h.pendingSince)
	q.Queue(`COMMIT`)
	if err := conn.SendBatch(ctx, &q).Close(); err != nil {
		return fmt.Errorf("floor: write rows %d-%d: %w", h.seq-int64(len(group))+1, h.seq, err)
	}
	return nil
}

// rollback ends a failed transaction; should that fail too, the
// connection is left in the transaction and the pool drops it.
func rollback(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = conn.Exec(ctx, `ROLLBACK`)
}
