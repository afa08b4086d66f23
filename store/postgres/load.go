package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/custody-dev/custody"
)

// loadBatch is how many entries a Loader inserts per statement.
const loadBatch = 1000

// Loader writes an existing ledger, its approvals and its state into an
// empty store, inside the one transaction of Load.
type Loader struct {
	ctx     context.Context
	tx      pgx.Tx
	head    custody.Receipt
	covered int64
	pending []*custody.Entry
}

// Load copies a ledger into db, which must hold no entry, approval nor
// state: fill gives the Loader the entries in seq order, the checkpoints,
// the approvals and the state. Everything is written in one transaction
// that holds the chain's head, so that no instance appends in between and
// a failed copy leaves the store empty. The entries are written as they
// are, hashes and all: verify both sides afterwards.
func (db *DB) Load(ctx context.Context, fill func(*Loader) error) error {
	if db.opts.ReadOnly {
		return errClosed("load a ledger")
	}
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		h, err := lockHead(ctx, tx)
		if err != nil {
			return unavailable("load a ledger", err)
		}
		if err := checkEmpty(ctx, tx, h); err != nil {
			return err
		}
		l := &Loader{ctx: ctx, tx: tx}
		if err := fill(l); err != nil {
			return err
		}
		return l.finish(db.opts.Now())
	})
	if err != nil {
		return err
	}
	// The copy took the source's id: checkpoints signed from now on name it.
	db.ledgerID, err = ensureLedgerID(ctx, db.pool)
	return err
}

// checkEmpty refuses to load into a store that holds anything.
func checkEmpty(ctx context.Context, tx pgx.Tx, h headRow) error {
	var used bool
	const q = `SELECT EXISTS (SELECT 1 FROM approvals) OR EXISTS (SELECT 1 FROM state) OR EXISTS (SELECT 1 FROM checkpoints)`
	if err := tx.QueryRow(ctx, q).Scan(&used); err != nil {
		return unavailable("load a ledger", err)
	}
	if h.receipt.Seq > 0 || used {
		return custody.Errorf(custody.ECONFLICT, "the target store is not empty: a ledger is loaded only into a new one")
	}
	return nil
}

// Entry adds the next entry of the ledger; its seq must follow the one
// before.
func (l *Loader) Entry(e custody.Entry) error {
	if e.Seq != l.head.Seq+1 {
		return custody.Errorf(custody.EINVALID, "load: entry %d follows entry %d", e.Seq, l.head.Seq)
	}
	l.pending = append(l.pending, &e)
	l.head = custody.Receipt{Seq: e.Seq, Hash: e.Hash}
	if len(l.pending) == loadBatch {
		return l.flush()
	}
	return nil
}

func (l *Loader) flush() error {
	if len(l.pending) == 0 {
		return nil
	}
	var q pgx.Batch
	queueInsert(&q, l.pending)
	l.pending = l.pending[:0]
	if err := l.tx.SendBatch(l.ctx, &q).Close(); err != nil {
		return unavailable("load entries", err)
	}
	return nil
}

// Checkpoint adds a signed checkpoint as it is. A checkpoint that names
// its ledger gives the copy the source's id: the copy is the same ledger.
func (l *Loader) Checkpoint(cp custody.Checkpoint) error {
	const q = `INSERT INTO checkpoints (size, head, at, sig, ledger) VALUES ($1, $2, $3, $4, $5)`
	if _, err := l.tx.Exec(l.ctx, q, cp.Size, cp.Head, cp.At, cp.Sig, cp.Ledger); err != nil {
		return unavailable("load checkpoint", err)
	}
	if cp.Ledger != "" {
		if _, err := l.tx.Exec(l.ctx, `UPDATE signing_key SET ledger_id = $1 WHERE id = 1`, cp.Ledger); err != nil {
			return unavailable("load the ledger id", err)
		}
	}
	l.covered = max(l.covered, cp.Size)
	return nil
}

// Approval adds a request as it stands, with the digest it was asked for
// (a.Digest when no operator's edit rebound it).
func (l *Loader) Approval(a custody.Approval, requestedDigest string) error {
	doc, err := json.Marshal(a)
	if err != nil {
		return custody.Errorf(custody.EINVALID, "approval %s: %v", a.ID, err)
	}
	const q = `INSERT INTO approvals (id, status, consumed_seq, created_at, trace, digest, requested_digest, doc, requester)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`
	if _, err := l.tx.Exec(l.ctx, q, a.ID, string(a.Status), a.ConsumedSeq, a.CreatedAt, a.Trace, a.Digest, requestedDigest, doc, a.Requester); err != nil {
		return unavailable("load approval "+a.ID, err)
	}
	return nil
}

// State adds a state document.
func (l *Loader) State(ns, key string, doc json.RawMessage) error {
	return unavailable("load state", putState(ns, key, doc).run(l.ctx, l.tx))
}

// finish writes the last entries and moves the head to the last one.
func (l *Loader) finish(now time.Time) error {
	if err := l.flush(); err != nil {
		return err
	}
	var since *time.Time
	if l.head.Seq > l.covered {
		since = &now
	}
	const q = `UPDATE ledger_head SET seq = $1, hash = $2, checkpoint_size = $3, pending_since = $4 WHERE id = 1`
	if _, err := l.tx.Exec(l.ctx, q, l.head.Seq, l.head.Hash, l.covered, since); err != nil {
		return unavailable("load: move the head", err)
	}
	return nil
}
