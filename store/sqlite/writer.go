package sqlite

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/queue"
	"github.com/custody-dev/custody/ledger"
)

const (
	// queueSize bounds the writes waiting for the writer; a caller beyond it
	// waits to enqueue.
	queueSize = 4096
	// maxBatch bounds how many requests share one transaction.
	maxBatch = 1024
)

// request is one write waiting for the writer: an append, an operation on
// the approvals or state tables, or a checkpoint.
type request struct {
	ctx  context.Context
	what string // names the write in errors: "append evidence", ...
	// Exactly one of entry, op and checkpoint is set, but for an entry
	// with checkpoint set: a checkpoint covering the entry then commits
	// with it.
	entry      *custody.Entry
	op         func(ctx context.Context, tx *sql.Tx) error
	checkpoint bool
	// prepared is entry readied for sealing by Append.
	prepared *ledger.Prepared
	// changes are the state changes committed with entry.
	changes []custody.Change

	resp response
	// done receives one value once resp is final; its buffer of one
	// lets the writer go on without waiting for the caller.
	done chan struct{}
}

type response struct {
	entry    custody.Entry
	cp       custody.Checkpoint
	err      error
	panicked any // a panic in op, re-raised in the caller
}

// writer owns the write connection. Only its goroutine touches it.
type writer struct {
	conn  *sql.DB
	stmts *insertStmts
	// changeStmts are the statements of the changes, prepared once.
	changeStmts *stmtCache
	priv        ed25519.PrivateKey
	opts        Options
	// sealer keeps its hashing buffer from one entry to the next.
	sealer ledger.Sealer
	// trees remembers the Merkle tree between checkpoints (tlog.go).
	trees treeCache
	// publish makes a durable head visible to readers.
	publish func(custody.Receipt)
	// sync makes committed batches durable and answers them.
	sync *syncer
	// files, health, tail and record: see files.go, health.go and
	// identity.go.
	files  *fileWatch
	health writeHealth
	tail   *tailSeal
	record *recorder
	// fence, once set, refuses every write: see DB.Fence.
	fence atomic.Pointer[error]

	head custody.Receipt    // the committed head
	last custody.Checkpoint // the latest checkpoint; Size 0 when none
	// pendingSince is when the oldest entry not covered by a checkpoint
	// was committed; zero when every entry is covered.
	pendingSince time.Time

	// appended says whether this process appended anything: only then
	// does Close sign a final checkpoint, so that a store opened only to
	// read is not written to.
	appended bool
	// ratesPruned is when the stale rate windows were last pruned
	// (rates.go).
	ratesPruned time.Time
	// batches counts committed transactions, so that tests can see the
	// group commit at work.
	batches atomic.Int64
}

// batch is the state of one transaction: what it will make true if it
// commits.
type batch struct {
	head    custody.Receipt
	entries []*custody.Entry // sealed, in seq order
	cp      *custody.Checkpoint
}

func newWriter(ctx context.Context, db *DB, conn *sql.DB, path string) (*writer, error) {
	w := &writer{conn: conn, priv: db.priv, opts: db.opts, publish: db.publish, sync: newSyncer(path, db.opts.fsync, db.opts.Logger)}
	var err error
	if w.files, err = watchFile(path); err != nil {
		return nil, err
	}
	if w.changeStmts, err = prepareStmts(ctx, conn, changeQueries...); err != nil {
		return nil, err
	}
	if w.stmts, err = prepareInserts(ctx, conn); err != nil {
		w.changeStmts.close()
		return nil, err
	}
	if w.tail, err = prepareTail(ctx, conn); err != nil {
		w.changeStmts.close()
		w.stmts.close()
		return nil, err
	}
	if w.head, err = readHead(ctx, conn); err != nil {
		w.closeStmts()
		return nil, err
	}
	if w.last, err = latestCheckpoint(ctx, conn); err != nil && custody.ErrorKind(err) != custody.ENOTFOUND {
		w.closeStmts()
		return nil, err
	}
	if w.head.Seq > w.last.Size {
		w.pendingSince = w.opts.Now()
	}
	return w, nil
}

// run serves requests until reqs is closed, then writes the final
// checkpoint.
func (db *DB) run() {
	defer close(db.stopped)
	w := db.w
	synced := make(chan struct{})
	go w.runSync(synced)
	defer func() { <-synced }()
	defer close(w.sync.queue)
	tick := time.NewTicker(max(w.opts.CheckpointInterval/2, time.Millisecond))
	defer tick.Stop()
	buf := make([]*request, 0, maxBatch)
	for {
		select {
		case r, ok := <-db.reqs:
			if !ok {
				if w.appended {
					w.checkpointIfPending(true)
				}
				return
			}
			buf = queue.Gather(append(buf[:0], r), db.reqs, maxBatch)
			w.commit(buf)
			clear(buf) // let the requests be collected
		case <-tick.C:
			w.checkpointIfPending(false)
			w.pruneRatesIfDue()
		}
	}
}

// checkpointIfPending writes a checkpoint when entries have waited for one
// for CheckpointInterval, or at once when now is set.
func (w *writer) checkpointIfPending(now bool) {
	if w.pendingSince.IsZero() {
		return
	}
	if !now && w.opts.Now().Sub(w.pendingSince) < w.opts.CheckpointInterval {
		return
	}
	// A failure leaves pendingSince set: the next tick or batch retries.
	w.commit([]*request{{ctx: context.Background(), what: "write checkpoint", checkpoint: true, done: make(chan struct{}, 1)}})
}

// maxRebases bounds how many times one batch goes again after finding
// that other processes appended.
const maxRebases = 8

// commit runs one batch in one transaction and hands it to the syncer,
// which answers its requests once it is durable. A batch that fails is
// answered at once.
func (w *writer) commit(reqs []*request) {
	ctx := context.Background()
	err := errors.Join(w.sync.err(), w.files.check(), w.fenced())
	var b *batch
	if err == nil {
		b, err = w.try(ctx, reqs)
		for n := 0; err != nil && n < maxRebases && w.rebase(ctx, &err); n++ {
			// Another process appended since this one last committed: the
			// batch goes again, after the new head.
			b, err = w.try(ctx, reqs)
		}
		w.health.observe(err, w.opts.Now())
	}
	if err != nil {
		for _, r := range reqs {
			r.resp.entry, r.resp.cp = custody.Entry{}, custody.Checkpoint{}
			if r.resp.err == nil {
				r.resp.err = unavailable(r.what, err)
			}
			r.done <- struct{}{}
		}
		return
	}
	w.committed(b)
	w.sync.queue <- synced{b: b, reqs: slices.Clone(reqs)}
}

// try runs reqs in one transaction, from a clean slate.
func (w *writer) try(ctx context.Context, reqs []*request) (*batch, error) {
	for _, r := range reqs {
		r.resp = response{}
	}
	b := &batch{}
	return b, w.inTx(ctx, func(tx *sql.Tx) error { return w.apply(ctx, tx, b, reqs) })
}

// rebase reports whether the ledger's head is no longer the one this
// writer committed last, because another process appended, and then takes
// the new head as its own. A head that process wrote without this data
// directory's key is not built on: *failed says so.
func (w *writer) rebase(ctx context.Context, failed *error) bool {
	head, ok, err := w.tail.headVouched(ctx, w.conn)
	if err != nil || head == w.head {
		return false
	}
	if !ok {
		*failed = errors.Join(*failed, fmt.Errorf("another process appended up to seq %d without this data directory's key: "+
			"refusing to build on entries it cannot vouch for", head.Seq))
		return false
	}
	w.head = head
	w.publish(head)
	return true
}

// vouched refuses head, found in tx where this writer left another, when
// the process that wrote it did not hold this data directory's key: no
// checkpoint is signed over entries nobody here can vouch for.
func (w *writer) vouched(ctx context.Context, tx *sql.Tx, head custody.Receipt) error {
	got, ok, err := w.tail.headVouched(ctx, tx)
	switch {
	case err != nil:
		return err
	case !ok || got != head:
		return fmt.Errorf("refusing to sign over seq %d: another process appended it without this data directory's key", head.Seq)
	}
	return nil
}

// committed makes the batch's outcome the writer's state: the next batch
// chains on from its head. Readers see the head once it is durable.
func (w *writer) committed(b *batch) {
	w.batches.Add(1)
	w.trees.committed(b)
	w.appended = w.appended || len(b.entries) > 0
	if b.head.Seq != w.head.Seq {
		w.head = b.head
		if w.pendingSince.IsZero() {
			w.pendingSince = w.opts.Now()
		}
	}
	if b.cp != nil {
		w.last = *b.cp
		if b.cp.Size == w.head.Seq {
			w.pendingSince = time.Time{}
		}
	}
}

func (w *writer) inTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := w.conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		return errors.Join(err, ignoreDone(tx.Rollback()))
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// ignoreDone drops the error of rolling back a transaction SQLite already
// rolled back.
func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}

// apply seals the appends in order, runs the operations, inserts the
// entries and writes a checkpoint when one is due. An error fails the whole
// batch; a refused entry or a failed operation only its own request.
func (w *writer) apply(ctx context.Context, tx *sql.Tx, b *batch, reqs []*request) error {
	// The chain goes on from the head this writer committed last. Should
	// another process have appended since, the entry at the next seq is
	// there already: inserting this batch's first entry fails, and
	// commit tries again after the database's head.
	b.head = w.head
	now := w.opts.Now()
	wantCP := false
	for _, r := range reqs {
		if err := r.ctx.Err(); err != nil {
			r.resp.err = unavailable(r.what, err)
			continue
		}
		switch {
		case r.entry != nil:
			if err := w.seal(ctx, tx, b, r); err != nil {
				return err
			}
			wantCP = wantCP || (r.checkpoint && r.resp.err == nil)
		case r.op != nil:
			runOp(ctx, tx, r)
		case r.checkpoint:
			wantCP = true
		}
	}
	if len(b.entries) == 0 {
		// Nothing inserted proves the head: a checkpoint in this batch
		// must cover the database's.
		head, err := w.stmts.readHead(ctx, tx)
		if err != nil {
			return err
		}
		if head != w.head {
			if err := w.vouched(ctx, tx, head); err != nil {
				return err
			}
		}
		b.head = head
	} else if err := w.stmts.insert(ctx, tx, b.entries); err != nil {
		return err
	} else if err := w.tail.write(ctx, tx, b.head); err != nil {
		return err
	}
	return w.checkpoint(ctx, tx, b, reqs, now, wantCP)
}

// seal puts r's entry on the chain after b.head and applies its changes;
// an entry that cannot be sealed, or whose changes fail, is refused alone
// and the chain goes on without it. A storage failure fails the batch.
func (w *writer) seal(ctx context.Context, tx *sql.Tx, b *batch, r *request) error {
	e := *r.entry
	e.Seq = b.head.Seq + 1
	if err := w.sealer.SealPrepared(b.head.Hash, &e, r.prepared); err != nil {
		r.resp.err = &custody.Error{Kind: custody.EINVALID, Message: "entry: " + err.Error(), Err: err}
		return nil
	}
	if len(r.changes) > 0 {
		if err := w.applyChanges(ctx, tx, e.Seq, r); err != nil {
			return err
		}
		if r.resp.err != nil {
			return nil
		}
	}
	r.resp.entry = e
	b.head = custody.Receipt{Seq: e.Seq, Hash: e.Hash}
	b.entries = append(b.entries, &r.resp.entry)
	return nil
}

// The statements of the savepoint around an entry's changes.
const (
	savepoint         = `SAVEPOINT changes`
	rollbackSavepoint = `ROLLBACK TO changes`
	releaseSavepoint  = `RELEASE changes`
)

// applyChanges applies r's changes for the entry at seq inside a
// savepoint: a change that fails undoes the ones before it and refuses r
// alone. Only a failure to undo them fails the batch.
func (w *writer) applyChanges(ctx context.Context, sqltx *sql.Tx, seq int64, r *request) error {
	tx := w.changeStmts.in(sqltx)
	if _, err := tx.ExecContext(ctx, savepoint); err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	if err := applyChanges(ctx, tx, seq, r.changes); err != nil {
		r.resp.err = unavailable(r.what, err)
		if _, rerr := tx.ExecContext(ctx, rollbackSavepoint); rerr != nil {
			return fmt.Errorf("roll back changes: %w", rerr)
		}
	}
	if _, err := tx.ExecContext(ctx, releaseSavepoint); err != nil {
		return fmt.Errorf("release savepoint: %w", err)
	}
	return nil
}

// runOp runs an approval or state operation; a panic is handed back to the
// caller instead of killing the writer.
func runOp(ctx context.Context, tx *sql.Tx, r *request) {
	defer func() {
		if v := recover(); v != nil {
			r.resp.panicked = v
			r.resp.err = fmt.Errorf("%s: panic: %v", r.what, v)
		}
	}()
	r.resp.err = r.op(ctx, tx)
}

// checkpoint signs and stores a checkpoint of b.head when one is due, and
// answers the checkpoint requests of the batch.
func (w *writer) checkpoint(ctx context.Context, tx *sql.Tx, b *batch, reqs []*request, now time.Time, requested bool) error {
	fresh := b.head.Seq - w.last.Size
	due := requested ||
		fresh >= int64(w.opts.CheckpointEvery) ||
		(!w.pendingSince.IsZero() && now.Sub(w.pendingSince) >= w.opts.CheckpointInterval)
	cp := w.last
	if due && fresh > 0 {
		cp = ledger.SignLedgerCheckpoint(w.priv, w.tail.ledger, b.head.Seq, b.head.Hash, custody.FormatTime(now))
		if err := insertCheckpoint(ctx, tx, cp); err != nil {
			return err
		}
		if err := w.sealNote(ctx, tx, cp, b.entries); err != nil {
			return err
		}
		b.cp = &cp
	}
	for _, r := range reqs {
		if !r.checkpoint || r.resp.err != nil || r.entry != nil {
			continue
		}
		if cp.Size == 0 {
			r.resp.err = custody.Errorf(custody.ENOTFOUND, "the ledger is empty: nothing to checkpoint")
			continue
		}
		r.resp.cp = cp
	}
	return nil
}

func insertCheckpoint(ctx context.Context, tx *sql.Tx, cp custody.Checkpoint) error {
	// Another process may have signed the same size already.
	const q = `INSERT OR IGNORE INTO checkpoints (ledger, size, head, at, sig) VALUES (?, ?, ?, ?, ?)`
	if _, err := tx.ExecContext(ctx, q, cp.Ledger, cp.Size, cp.Head, cp.At, cp.Sig); err != nil {
		return fmt.Errorf("insert checkpoint: %w", err)
	}
	return nil
}

// close releases the write connection; the writer goroutine has stopped.
func (w *writer) close() error {
	if w.record != nil {
		w.record.close()
	}
	return errors.Join(w.closeStmts(), w.conn.Close(), w.sync.close())
}

// closeStmts closes the writer's prepared statements.
func (w *writer) closeStmts() error {
	return errors.Join(w.stmts.close(), w.changeStmts.close(), w.tail.stmt.Close())
}
