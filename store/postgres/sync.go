package postgres

import (
	"context"
	"fmt"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/queue"
)

// A group's transaction commits asynchronously (synchronous_commit off,
// for that transaction only): its row lock on the head is released as
// soon as its commit record is in the server's log, not once the log is
// flushed, so the next group, of this instance or another, need not wait
// for this one's flush. The appends of the group are answered only after
// a barrier: a transaction committed synchronously after it, whose commit
// record comes later in the log, so that flushing it flushes the group.
// Barriers of several groups and instances share the server's flushes.
//
// Nothing unflushed is ever acknowledged. Another instance may read a
// group before it is flushed and chain its own after it; should the server
// crash before the flush, the log loses that group and everything after
// it, the other instance's too, and neither was acknowledged. An instance
// acts on what it read only once its own commit, later in the log, has
// passed its barrier.

// synced is a committed group waiting for its barrier.
type synced struct {
	head custody.Receipt
	reqs []*request
}

// syncLoop passes the committed groups through barriers and answers
// them, until q is closed. The groups waiting when a barrier begins share
// it.
func (db *DB) syncLoop(q <-chan synced, done chan<- struct{}) {
	defer close(done)
	buf := make([]synced, 0, 64)
	for s := range q {
		buf = queue.Drain(append(buf[:0], s), q, cap(buf))
		err := db.barrier()
		for _, s := range buf {
			if err == nil {
				db.publish(s.head)
			}
			for _, r := range s.reqs {
				if err != nil && r.resp.err == nil {
					r.resp.entry, r.resp.cp = custody.Entry{}, custody.Checkpoint{}
					r.resp.err = unavailable(r.what, err)
				}
				r.done <- struct{}{}
			}
		}
		clear(buf)
	}
}

// barrierSQL is a transaction that writes to the log, the least it can:
// a transactional logical message, which takes a transaction id and logs
// one record. Committed synchronously, it flushes the log up to its commit
// record. A transaction that only takes an id would not do: the server
// commits a transaction that wrote nothing to the log asynchronously,
// whatever synchronous_commit says, and its return would flush nothing.
const barrierSQL = `SELECT pg_logical_emit_message(true, 'custody', 'barrier')::text`

// barrier returns once everything committed before it is durable: it
// commits, synchronously, a transaction that writes to the log (see
// barrierSQL), which makes the server flush the log up to its commit
// record. A failure leaves the groups before it of unknown fate: their
// appends are answered unavailable, though some may survive.
func (db *DB) barrier() error {
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	var lsn string
	if err := db.pool.QueryRow(ctx, barrierSQL).Scan(&lsn); err != nil {
		db.opts.Logger.Warn("durability barrier failed", "err", err)
		return fmt.Errorf("flush the log: %w", err)
	}
	return nil
}
