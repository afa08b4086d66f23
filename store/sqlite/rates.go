package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/custody-dev/custody/internal/ratewindow"
)

// PruneRates deletes the rate-limit windows stale at now (their window
// ended a whole window ago, ratewindow.Stale) and returns how many it
// deleted: no gateway counts in them again, so every limit stays exact.
// A serving store prunes on its own, every ratewindow.PruneEvery; this is
// the same pass, on demand.
func (db *DB) PruneRates(ctx context.Context, now time.Time) (int64, error) {
	var n int64
	_, err := db.do(ctx, pruneRequest(now, &n))
	return n, err
}

// pruneRequest is the write that prunes the windows stale at now and
// counts them into n.
func pruneRequest(now time.Time, n *int64) *request {
	return &request{ctx: context.Background(), what: "prune rate windows", done: make(chan struct{}, 1),
		op: func(ctx context.Context, tx *sql.Tx) (err error) {
			*n, err = pruneRates(ctx, tx, now)
			return err
		}}
}

// pruneRates deletes the stale windows in tx.
func pruneRates(ctx context.Context, tx *sql.Tx, now time.Time) (int64, error) {
	rows, err := tx.QueryContext(ctx, `SELECT key FROM state WHERE ns = ?`, ratewindow.NS)
	if err != nil {
		return 0, fmt.Errorf("list rate windows: %w", err)
	}
	var stale []string
	for rows.Next() {
		var key string
		if err := rows.Scan(&key); err != nil {
			rows.Close()
			return 0, fmt.Errorf("list rate windows: %w", err)
		}
		if ratewindow.Stale(key, now) {
			stale = append(stale, key)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("list rate windows: %w", err)
	}
	for _, key := range stale {
		if _, err := tx.ExecContext(ctx, `DELETE FROM state WHERE ns = ? AND key = ?`, ratewindow.NS, key); err != nil {
			return 0, fmt.Errorf("delete rate window: %w", err)
		}
	}
	return int64(len(stale)), nil
}

// pruneRatesIfDue prunes the stale rate windows on the writer's tick,
// once every ratewindow.PruneEvery, in a store this process writes to:
// one opened to read is not written to. A failure is tried again at the
// next pass.
func (w *writer) pruneRatesIfDue() {
	now := w.opts.Now()
	if !w.appended || now.Sub(w.ratesPruned) < ratewindow.PruneEvery {
		return
	}
	w.ratesPruned = now
	var n int64
	w.commit([]*request{pruneRequest(now, &n)})
}
