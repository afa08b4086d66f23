package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
)

// checkpoint signs a checkpoint of b's head when one is due: when
// requested, when CheckpointEvery entries wait for one, or when the oldest
// of them has waited CheckpointInterval. Whichever instance holds the head
// when it falls due signs it, with the key every instance shares. It
// keeps the head row's record of what waits up to date.
func (w *writer) checkpoint(b *batch, requested bool) {
	h := &b.head
	now := w.db.opts.Now()
	fresh := h.receipt.Seq - h.checkpointSize
	if fresh > 0 && h.pendingSince == nil {
		h.pendingSince = &now
	}
	due := requested || fresh >= int64(w.db.opts.CheckpointEvery) ||
		(h.pendingSince != nil && now.Sub(*h.pendingSince) >= w.db.opts.CheckpointInterval)
	if !due || fresh <= 0 {
		return
	}
	cp := sign(w.db, h.receipt, now)
	b.cp = &cp
	h.checkpointSize, h.pendingSince = h.receipt.Seq, nil
}

// sign signs a checkpoint of head. When ledgers get ids, this is where
// the checkpoint names it.
func sign(db *DB, head custody.Receipt, now time.Time) custody.Checkpoint {
	return ledger.SignLedgerCheckpoint(db.priv, db.ledgerID, head.Seq, head.Hash, custody.FormatTime(now))
}

// answerCheckpoints gives every checkpoint request of the group the
// checkpoint that covers the head: the one just signed or the latest.
func (w *writer) answerCheckpoints(ctx context.Context, tx querier, b *batch, reqs []*request) error {
	var cp *custody.Checkpoint
	for _, r := range reqs {
		if r.checkpoint != cpRequested || r.resp.err != nil {
			continue
		}
		if cp == nil {
			latest, err := w.coveringCheckpoint(ctx, tx, b)
			if err != nil {
				return err
			}
			cp = &latest
		}
		if cp.Size == 0 {
			r.resp.err = custody.Errorf(custody.ENOTFOUND, "the ledger is empty: nothing to checkpoint")
			continue
		}
		r.resp.cp = *cp
	}
	return nil
}

func (w *writer) coveringCheckpoint(ctx context.Context, tx querier, b *batch) (custody.Checkpoint, error) {
	if b.cp != nil {
		return *b.cp, nil
	}
	cp, err := latestCheckpoint(ctx, tx)
	if custody.ErrorKind(err) == custody.ENOTFOUND {
		return custody.Checkpoint{}, nil
	}
	return cp, err
}

// querier is what a pool, a connection and a transaction offer.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func latestCheckpoint(ctx context.Context, q querier) (custody.Checkpoint, error) {
	var cp custody.Checkpoint
	const sel = `SELECT size, head, at, sig, ledger FROM checkpoints ORDER BY size DESC LIMIT 1`
	err := q.QueryRow(ctx, sel).Scan(&cp.Size, &cp.Head, &cp.At, &cp.Sig, &cp.Ledger)
	if errors.Is(err, pgx.ErrNoRows) {
		return cp, custody.Errorf(custody.ENOTFOUND, "no checkpoint yet")
	}
	if err != nil {
		return cp, unavailable("read checkpoint", err)
	}
	return cp, nil
}

func readCheckpoints(ctx context.Context, q querier) ([]custody.Checkpoint, error) {
	rows, err := q.Query(ctx, `SELECT size, head, at, sig, ledger FROM checkpoints ORDER BY size`)
	if err != nil {
		return nil, fmt.Errorf("read checkpoints: %w", err)
	}
	cps, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (custody.Checkpoint, error) {
		var cp custody.Checkpoint
		err := row.Scan(&cp.Size, &cp.Head, &cp.At, &cp.Sig, &cp.Ledger)
		return cp, err
	})
	if err != nil {
		return nil, fmt.Errorf("read checkpoints: %w", err)
	}
	return cps, nil
}

// Checkpoint signs and stores a checkpoint of the current head now, unless
// the latest checkpoint already covers it, and returns the checkpoint that
// covers the head. ENOTFOUND when the ledger is empty.
func (db *DB) Checkpoint(ctx context.Context) (custody.Checkpoint, error) {
	r := &request{what: "write checkpoint", checkpoint: cpRequested, done: make(chan struct{}, 1)}
	resp, err := db.do(ctx, r)
	if err != nil {
		return custody.Checkpoint{}, err
	}
	return resp.cp, nil
}

// LatestCheckpoint returns the checkpoint of the largest size; ENOTFOUND
// when none was written yet.
func (db *DB) LatestCheckpoint(ctx context.Context) (custody.Checkpoint, error) {
	return latestCheckpoint(ctx, db.pool)
}

// Checkpoints returns every signed checkpoint in size order.
func (db *DB) Checkpoints(ctx context.Context) ([]custody.Checkpoint, error) {
	cps, err := readCheckpoints(ctx, db.pool)
	if err != nil {
		return nil, unavailable("read checkpoints", err)
	}
	return cps, nil
}
