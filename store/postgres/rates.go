package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/ratewindow"
)

// pruneTimeout bounds one pass of the writer's pruning of rate windows.
const pruneTimeout = 10 * time.Second

// PruneRates deletes the rate-limit windows stale at now (their window
// ended a whole window ago, ratewindow.Stale) and returns how many it
// deleted: no gateway counts in them again, so every limit stays exact.
// An instance that appends prunes on its own, every
// ratewindow.PruneEvery; this is the same pass, on demand.
func (db *DB) PruneRates(ctx context.Context, now time.Time) (int64, error) {
	if db.opts.ReadOnly {
		return 0, custody.Errorf(custody.EUNAVAILABLE, "prune rate windows: the store is open read-only")
	}
	rows, err := db.pool.Query(ctx, `SELECT key FROM state WHERE ns = $1`, ratewindow.NS)
	if err != nil {
		return 0, unavailable("list rate windows", err)
	}
	var stale []string
	for rows.Next() {
		var key string
		if err := rows.Scan(&key); err != nil {
			rows.Close()
			return 0, unavailable("list rate windows", err)
		}
		if ratewindow.Stale(key, now) {
			stale = append(stale, key)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, unavailable("list rate windows", err)
	}
	if len(stale) == 0 {
		return 0, nil
	}
	tag, err := db.pool.Exec(ctx, `DELETE FROM state WHERE ns = $1 AND key = ANY($2)`, ratewindow.NS, stale)
	if err != nil {
		return 0, unavailable("delete rate windows", fmt.Errorf("%d windows: %w", len(stale), err))
	}
	return tag.RowsAffected(), nil
}

// pruneRatesIfDue prunes the stale rate windows on the writer's tick,
// once every ratewindow.PruneEvery, in an instance that appends: one
// opened to read is not written to, nor one fenced. A failure is tried
// again at the next pass.
func (w *writer) pruneRatesIfDue() {
	now := w.db.opts.Now()
	if !w.appended || w.fence.Load() != nil || now.Sub(w.ratesPruned) < ratewindow.PruneEvery {
		return
	}
	w.ratesPruned = now
	ctx, cancel := context.WithTimeout(context.Background(), pruneTimeout)
	defer cancel()
	_, _ = w.db.PruneRates(ctx, now)
}
