package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math"
)

// merger moves the rows of the index's recent level to its main level
// one key range at a time (see indexSchema). Its statements run in the
// indexer's transactions; only the indexer goroutine uses it.
type merger struct {
	// limit is how many rows recent holds before updates move some.
	limit int
	// rows is about how many rows recent holds: counted when the
	// index opens, then kept up to date by this process. Another process
	// indexing the same directory makes it a guess, which only moves a
	// merge earlier or later.
	rows int
	// next is the key range the next move takes, 0 to mergeSlices-1.
	next int

	move, drop *sql.Stmt
}

func (m *merger) prepare(ctx context.Context, db *sql.DB) error {
	var err error
	// Selected in key order, the moved rows are inserted in key order:
	// SQLite fills neighbouring pages of the main level rather than
	// touching a random page per row. OR IGNORE, as for every insert into
	// the index: a statement that cannot abort half-way needs no
	// statement journal.
	const move = `INSERT OR IGNORE INTO runs (key, first, last, seqs)
		SELECT key, first, last, seqs FROM recent WHERE key BETWEEN ? AND ? ORDER BY key, first`
	if m.move, err = db.PrepareContext(ctx, move); err != nil {
		return fmt.Errorf("prepare index merge: %w", err)
	}
	if m.drop, err = db.PrepareContext(ctx, `DELETE FROM recent WHERE key BETWEEN ? AND ?`); err != nil {
		return fmt.Errorf("prepare index merge: %w", err)
	}
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM recent`).Scan(&m.rows); err != nil {
		return fmt.Errorf("count recent rows: %w", err)
	}
	if m.limit <= 0 {
		m.limit = defaultIndexRecent
	}
	return nil
}

// added counts n rows inserted into recent.
func (m *merger) added(n int) { m.rows += n }

// step moves the next key range of recent to the main level in tx, when
// recent holds more than its limit.
func (m *merger) step(ctx context.Context, tx *sql.Tx) error {
	if m.rows <= m.limit {
		return nil
	}
	lo, hi := keyRange(m.next)
	if _, err := tx.StmtContext(ctx, m.move).ExecContext(ctx, lo, hi); err != nil {
		return fmt.Errorf("merge postings: %w", err)
	}
	res, err := tx.StmtContext(ctx, m.drop).ExecContext(ctx, lo, hi)
	if err != nil {
		return fmt.Errorf("merge postings: %w", err)
	}
	moved, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("merge postings: %w", err)
	}
	// Counted before the transaction commits: were it to fail, the count
	// is a little low until the next open, and the next merge comes late.
	m.rows = max(m.rows-int(moved), 0)
	m.next = (m.next + 1) % mergeSlices
	return nil
}

// keyRange returns the inclusive bounds of the i-th of mergeSlices equal
// ranges of the int64 keys, in key order.
func keyRange(i int) (lo, hi int64) {
	// In uint64 the ranges are [i*width, (i+1)*width-1]; flipping the top
	// bit maps uint64 order onto int64 order.
	const flip = 1 << 63
	width := uint64(math.MaxUint64)/mergeSlices + 1
	u := uint64(i) * width
	if i == mergeSlices-1 {
		return int64(u ^ flip), math.MaxInt64
	}
	return int64(u ^ flip), int64((u + width - 1) ^ flip)
}
