package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/queue"
	"github.com/custody-dev/custody/ledger"
)

const (
	// queueSize bounds the writes waiting for the writer; a caller beyond
	// it waits to enqueue.
	queueSize = 4096
	// maxBatch bounds how many requests share one transaction.
	maxBatch = 1024
	// commitTimeout bounds one group's transaction, so that a server that
	// stops answering fails the waiting appends instead of holding them.
	commitTimeout = 30 * time.Second
)

// Kinds of checkpoint request.
const (
	cpNone      = iota
	cpRequested // sign one now unless the head is covered
	cpTick      // sign one if it is due
)

// request is one write waiting for the writer: an append with its changes,
// or a checkpoint.
type request struct {
	ctx  context.Context
	what string
	// entry is the append, prepared for sealing into prep, unless
	// checkpoint is set.
	entry      custody.Entry
	z          ledger.Canonicalizer
	prep       ledger.Prepared
	changes    []custody.Change
	checkpoint int

	resp response
	done chan struct{} // receives once resp is final
}

type response struct {
	entry custody.Entry
	cp    custody.Checkpoint
	err   error
}

// writer commits the groups of one instance. Only the writer goroutine
// touches it but for batches.
type writer struct {
	db     *DB
	sealer ledger.Sealer
	// appended says whether this instance appended anything: only then
	// does Close sign a final checkpoint.
	appended bool
	// ratesPruned is when the stale rate windows were last pruned
	// (rates.go).
	ratesPruned time.Time
	// batches counts committed transactions.
	batches atomic.Int64
	// syncq takes committed groups to their barrier.
	syncq chan<- synced
	// fence, once set, refuses every write: see DB.Fence.
	fence atomic.Pointer[error]
}

// Fence refuses every write of this instance from now on (appends,
// commits, checkpoints) with EUNAVAILABLE, as a database that went away
// does, until the store is opened again: how a failed verification of
// the whole chain closes the store. The first reason given stays.
func (db *DB) Fence(reason error) {
	db.w.fence.CompareAndSwap(nil, &reason)
}

// fenced returns the reason the store was fenced, nil when it was not.
func (w *writer) fenced() error {
	if p := w.fence.Load(); p != nil {
		return *p
	}
	return nil
}

// batch is what one transaction makes true if it commits.
type batch struct {
	head    headRow
	entries []*custody.Entry
	cp      *custody.Checkpoint
	// savepoint says whether an entry's savepoint is open: the next
	// entry with changes releases it (COMMIT releases the last).
	savepoint bool
	// approvals are the ids of the approvals the group changes.
	approvals map[string]bool
}

// run serves requests until reqs is closed, then writes the final
// checkpoint.
func (db *DB) run() {
	defer close(db.stopped)
	syncq, synced := make(chan synced, queueSize), make(chan struct{})
	go db.syncLoop(syncq, synced)
	defer func() {
		close(syncq)
		<-synced
	}()
	w := db.w
	w.syncq = syncq
	tick := time.NewTicker(max(db.opts.CheckpointInterval/2, time.Millisecond))
	defer tick.Stop()
	buf := make([]*request, 0, maxBatch)
	for {
		select {
		case r, ok := <-db.reqs:
			if !ok {
				if w.appended {
					w.commit([]*request{newCheckpointRequest(cpRequested)})
				}
				return
			}
			buf = queue.Gather(append(buf[:0], r), db.reqs, maxBatch)
			buf = w.commit(buf)
			clear(buf)
		case <-tick.C:
			if w.checkpointDue() {
				w.commit([]*request{newCheckpointRequest(cpTick)})
			}
			w.pruneRatesIfDue()
		}
	}
}

func newCheckpointRequest(kind int) *request {
	return &request{ctx: context.Background(), what: "write checkpoint", checkpoint: kind, done: make(chan struct{}, 1)}
}

// checkpointDue reads, without a lock, whether entries have waited for a
// checkpoint for CheckpointInterval, so that an idle instance does not
// lock the head on every tick.
func (w *writer) checkpointDue() bool {
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	var since *time.Time
	if err := w.db.pool.QueryRow(ctx, `SELECT pending_since FROM ledger_head WHERE id = 1`).Scan(&since); err != nil {
		return false // the next tick tries again
	}
	return since != nil && w.db.opts.Now().Sub(*since) >= w.db.opts.CheckpointInterval
}

// commit runs reqs in one transaction and hands them to the barrier
// (see sync.go), which answers them each with its own outcome once the
// transaction is durable; if it fails they are answered unavailable at
// once.
func (w *writer) commit(reqs []*request) []*request {
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	for _, r := range reqs {
		r.resp = response{}
	}
	b := &batch{}
	err := w.fenced()
	if err == nil {
		reqs, err = w.inTx(ctx, b, reqs)
	}
	if err != nil {
		w.db.opts.Logger.Warn("group commit failed", "appends", len(reqs), "err", err)
		for _, r := range reqs {
			r.resp.entry, r.resp.cp = custody.Entry{}, custody.Checkpoint{}
			if r.resp.err == nil || custody.ErrorKind(r.resp.err) != custody.EINVALID {
				r.resp.err = unavailable(r.what, err)
			}
			r.done <- struct{}{}
		}
		return reqs
	}
	w.batches.Add(1)
	w.appended = w.appended || len(b.entries) > 0
	w.syncq <- synced{head: b.head.receipt, reqs: slices.Clone(reqs)}
	return reqs
}

// inTx runs the group in one transaction on a connection of the pool.
// It costs two round trips when no entry has changes: BEGIN with the
// head's lock, then the inserts with the head's move and COMMIT. A
// failure rolls back; a connection left in a transaction is closed by
// the pool rather than reused.
//
// The appends that queued while it waited for the lock (held by another
// instance, say) join the group: it returns the group as it committed it.
func (w *writer) inTx(ctx context.Context, b *batch, reqs []*request) ([]*request, error) {
	pc, err := w.db.pool.Acquire(ctx)
	if err != nil {
		return reqs, fmt.Errorf("connect: %w", err)
	}
	defer pc.Release()
	conn := pc.Conn()
	err = beginLocked(ctx, conn, &b.head)
	if err == nil {
		reqs = w.join(reqs)
		err = w.apply(ctx, conn, b, reqs)
	}
	if err != nil {
		rollback(conn)
	}
	return reqs, err
}

// join adds to reqs the appends waiting now, up to maxBatch, unless reqs
// is a checkpoint of its own.
func (w *writer) join(reqs []*request) []*request {
	if len(reqs) == 1 && reqs[0].checkpoint != cpNone {
		return reqs
	}
	n := len(reqs)
	reqs = queue.Drain(reqs, w.db.reqs, maxBatch)
	for _, r := range reqs[n:] {
		r.resp = response{}
	}
	return reqs
}

// beginLocked begins a transaction on conn and locks the chain's head in
// it, in one round trip: every other instance's group waits for the lock
// until this transaction ends.
func beginLocked(ctx context.Context, conn *pgx.Conn, h *headRow) error {
	var q pgx.Batch
	q.Queue(`BEGIN`)
	q.Queue(`SET LOCAL synchronous_commit = off`) // the barrier makes it durable
	q.Queue(lockHeadSQL).QueryRow(func(row pgx.Row) error { return scanHead(row, h) })
	if err := conn.SendBatch(ctx, &q).Close(); err != nil {
		return fmt.Errorf("lock the head: %w", err)
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

// apply seals the appends in order against the locked head, writes them
// with their changes, signs a checkpoint when one is due, moves the head
// and commits. An error fails the whole group; a refused entry or a
// failed condition only its own request.
func (w *writer) apply(ctx context.Context, conn *pgx.Conn, b *batch, reqs []*request) error {
	start := b.head.receipt.Seq
	requested := false
	for _, r := range reqs {
		if err := r.ctx.Err(); err != nil {
			r.resp.err = unavailable(r.what, err)
			continue
		}
		switch r.checkpoint {
		case cpRequested:
			requested = true
		case cpTick:
		default:
			if err := w.seal(ctx, conn, b, r); err != nil {
				return err
			}
		}
	}
	w.checkpoint(b, requested)
	if err := w.answerCheckpoints(ctx, conn, b, reqs); err != nil {
		return err
	}
	if len(b.entries) == 0 && b.cp == nil && b.head.receipt.Seq == start {
		_, err := conn.Exec(ctx, `COMMIT`) // nothing to write: the head stays
		return err
	}
	return w.db.writeBatch(ctx, conn, b)
}

// seal puts r's entry on the chain after b's head and applies its
// changes inside a savepoint: an entry that cannot be sealed, or whose
// changes fail, is refused alone and the chain goes on without it. A
// storage failure fails the group.
func (w *writer) seal(ctx context.Context, conn *pgx.Conn, b *batch, r *request) error {
	e := &r.resp.entry
	*e = r.entry
	e.Seq = b.head.receipt.Seq + 1
	if err := w.sealer.SealPrepared(b.head.receipt.Hash, e, &r.prep); err != nil {
		*e = custody.Entry{}
		r.resp.err = &custody.Error{Kind: custody.EINVALID, Message: "entry: " + err.Error(), Err: err}
		return nil
	}
	if len(r.changes) > 0 {
		refused, err := applyInSavepoint(ctx, conn, b, e.Seq, r.changes)
		if err != nil {
			return err
		}
		if refused != nil {
			*e = custody.Entry{}
			r.resp.err = refused
			return nil
		}
		for _, id := range approvalIDs(r.changes) {
			if b.approvals == nil {
				b.approvals = map[string]bool{}
			}
			b.approvals[id] = true
		}
	}
	b.head.receipt = custody.Receipt{Seq: e.Seq, Hash: e.Hash}
	b.entries = append(b.entries, e)
	return nil
}

// applyInSavepoint applies changes for the entry at seq in one round
// trip: it releases the savepoint of the entry before, takes one for this
// entry and runs every change's statement. A change that fails undoes the
// ones before it (a rollback to the savepoint) and is returned as
// refused; only a storage failure is returned as err.
func applyInSavepoint(ctx context.Context, conn *pgx.Conn, b *batch, seq int64, changes []custody.Change) (refused, err error) {
	stmts := make([]statement, len(changes))
	for i, c := range changes {
		st, err := changeStatement(seq, c)
		var ce *custody.Error
		if errors.As(err, &ce) {
			return c.Refused(ce), nil // refused before anything is sent
		}
		stmts[i] = st
	}
	var q pgx.Batch
	if b.savepoint {
		q.Queue(`RELEASE SAVEPOINT entry`)
	}
	q.Queue(`SAVEPOINT entry`)
	for _, st := range stmts {
		q.Queue(st.sql, st.args...)
	}
	br := conn.SendBatch(ctx, &q)
	refused, err = readChanges(br, b.savepoint, changes, stmts)
	cerr := br.Close()
	b.savepoint = true
	switch {
	case err != nil:
		return nil, err
	case refused == nil && cerr != nil:
		return nil, fmt.Errorf("apply changes: %w", cerr)
	case refused != nil:
		if _, err := conn.Exec(ctx, `ROLLBACK TO SAVEPOINT entry`); err != nil {
			return nil, fmt.Errorf("roll back changes: %w", err)
		}
	}
	return refused, nil
}

// readChanges reads the results of applyInSavepoint's batch up to the
// first change that fails.
func readChanges(br pgx.BatchResults, release bool, changes []custody.Change, stmts []statement) (refused, err error) {
	if release {
		if _, err := br.Exec(); err != nil {
			return nil, fmt.Errorf("release savepoint: %w", err)
		}
	}
	if _, err := br.Exec(); err != nil {
		return nil, fmt.Errorf("savepoint: %w", err)
	}
	for i, st := range stmts {
		err := st.read(br.QueryRow())
		var ce *custody.Error
		switch {
		case err == nil:
		case errors.As(err, &ce):
			return changes[i].Refused(ce), nil
		default:
			return nil, err
		}
	}
	return nil, nil
}

// writeBatch inserts the sealed entries and the checkpoint, moves the
// head and commits, in one round trip.
func (db *DB) writeBatch(ctx context.Context, conn *pgx.Conn, b *batch) error {
	var q pgx.Batch
	if len(b.entries) > 0 {
		queueInsert(&q, b.entries)
	}
	if b.cp != nil {
		q.Queue(`INSERT INTO checkpoints (size, head, at, sig, ledger) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (size) DO NOTHING`,
			b.cp.Size, b.cp.Head, b.cp.At, b.cp.Sig, b.cp.Ledger)
	}
	h := b.head
	q.Queue(`UPDATE ledger_head SET seq = $1, hash = $2, checkpoint_size = $3, pending_since = $4 WHERE id = 1`,
		h.receipt.Seq, h.receipt.Hash, h.checkpointSize, h.pendingSince)
	db.queueNotify(&q, b.approvals)
	q.Queue(`COMMIT`)
	if err := conn.SendBatch(ctx, &q).Close(); err != nil {
		return fmt.Errorf("write entries %d-%d: %w", h.receipt.Seq-int64(len(b.entries))+1, h.receipt.Seq, err)
	}
	return nil
}

// queueInsert queues one statement inserting every entry.
func queueInsert(q *pgx.Batch, entries []*custody.Entry) {
	n := len(entries)
	seq := make([]int64, n)
	at, kind, trace, actor, refs := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	body := make([][]byte, n)
	sum, prev, hash := make([]string, n), make([]string, n), make([]string, n)
	for i, e := range entries {
		seq[i], at[i], kind[i], trace[i], actor[i] = e.Seq, e.At, e.Kind, e.Trace, e.Actor
		refs[i], body[i], sum[i], prev[i], hash[i] = refsColumn(e.Refs), e.Body, e.BodySHA256, e.Prev, e.Hash
	}
	q.Queue(`INSERT INTO entries (`+entryColumns+`)
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bytea[], $8::text[], $9::text[], $10::text[])`,
		seq, at, kind, trace, actor, refs, body, sum, prev, hash)
}

// headRow is the chain's head row as a transaction holds it.
type headRow struct {
	receipt        custody.Receipt
	checkpointSize int64
	pendingSince   *time.Time
}

const lockHeadSQL = `SELECT seq, hash, checkpoint_size, pending_since FROM ledger_head WHERE id = 1 FOR UPDATE`

func scanHead(row pgx.Row, h *headRow) error {
	err := row.Scan(&h.receipt.Seq, &h.receipt.Hash, &h.checkpointSize, &h.pendingSince)
	if errors.Is(err, pgx.ErrNoRows) {
		return errors.New("the ledger_head row is missing")
	}
	return err
}

// lockHead locks the head row for the rest of tx.
func lockHead(ctx context.Context, tx pgx.Tx) (headRow, error) {
	var h headRow
	if err := scanHead(tx.QueryRow(ctx, lockHeadSQL), &h); err != nil {
		return h, fmt.Errorf("lock the head: %w", err)
	}
	return h, nil
}
