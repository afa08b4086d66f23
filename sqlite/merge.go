package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
)

// merges merges the index's segments on a goroutine of its own, so that
// no index update, and no lookup waiting for one, waits for a merge. A
// merge reads its segments in a read transaction, merges and encodes
// them outside any transaction, and only then installs the result in a
// short write transaction. Segments never change once written and only
// the merger (of this process or another on the same directory) removes
// them, so the install only checks that its segments are all still there.
type merges struct {
	kick   chan struct{} // a merge may be due; buffered
	cancel context.CancelFunc
	done   chan struct{}
	// hook, when set, runs before each install (tests hold one back).
	hook func()
	// failing says a failure was logged and not yet followed by success.
	failing bool
	// postings and spare are reused by every merge.
	postings, spare []posting
}

// startMerges starts the merger and has it look for due merges once.
func (lk *lookups) startMerges(hook func()) {
	ctx, cancel := context.WithCancel(context.Background())
	lk.merges = merges{kick: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{}), hook: hook}
	go lk.runMerges(ctx)
	lk.merges.wake()
}

// wake tells the merger that segments were added.
func (m *merges) wake() {
	if m.kick == nil {
		return
	}
	select {
	case m.kick <- struct{}{}:
	default: // it will look anyway
	}
}

// stopMerges stops the merger, abandoning a merge in progress at its next
// step, and waits for it to return.
func (lk *lookups) stopMerges() {
	if lk.merges.cancel == nil {
		return
	}
	lk.merges.cancel()
	<-lk.merges.done
}

// runMerges merges segments whenever some are due, until ctx ends.
func (lk *lookups) runMerges(ctx context.Context) {
	defer close(lk.merges.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-lk.merges.kick:
		}
		for {
			merged, err := lk.mergeOnce(ctx)
			if ctx.Err() != nil {
				return
			}
			lk.reportMerge(err)
			if err != nil || !merged {
				break
			}
		}
	}
}

// reportMerge logs the first failure of a streak, and the success that
// ends it. A failed merge harms nothing: lookups read more segments
// until one succeeds.
func (lk *lookups) reportMerge(err error) {
	m := &lk.merges
	switch {
	case err != nil && !m.failing:
		lk.log.Warn("merging the lookup index's segments failed; lookups still work, and it is tried again after the next update", "err", err)
		m.failing = true
	case err == nil && m.failing:
		lk.log.Info("merging the lookup index's segments works again")
		m.failing = false
	}
}

// mergeOnce merges the first segmentFanIn segments in a row that share a
// class below finalClass, if any, and reports whether it merged them.
// Once stop ends it abandons the merge between its steps, never within
// one: a query canceled under database/sql rolls back on a goroutine of
// its own and may close its connection after the index has closed,
// leaving the index's log behind it open.
func (lk *lookups) mergeOnce(stop context.Context) (bool, error) {
	m := &lk.merges
	ctx := context.WithoutCancel(stop)
	inputs, ps, bounds, err := lk.readMerge(ctx, m.postings[:0])
	if err != nil || inputs == nil || stop.Err() != nil {
		return false, err
	}
	ps, spare := mergeRuns(ps, m.spare, bounds)
	m.postings, m.spare = ps[:0], spare[:0]
	if cap(ps) > 1<<16 {
		// A merge into a large class: do not hold its buffers for good.
		m.postings, m.spare = nil, nil
	}
	if m.hook != nil {
		m.hook()
	}
	if stop.Err() != nil {
		return false, nil
	}
	return lk.installMerge(ctx, inputs, ps)
}

// readMerge finds the segments due to be merged, if any, and reads their
// postings onto ps, each segment's from the bound at its index on.
func (lk *lookups) readMerge(ctx context.Context, ps []posting) (inputs []segment, _ []posting, bounds []int, err error) {
	tx, err := lk.rdb.BeginTx(ctx, nil)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("merge segments: %w", err)
	}
	defer tx.Rollback()
	segs, err := lk.listSegmentRows(ctx, tx)
	if inputs = dueMerge(segs); err != nil || inputs == nil {
		return nil, nil, nil, err
	}
	var postings int64
	for _, s := range inputs {
		postings += s.postings
	}
	ps = slices.Grow(ps, int(postings))
	for _, s := range inputs {
		bounds = append(bounds, len(ps))
		if ps, err = lk.readPostings(ctx, tx, s, ps); err != nil {
			return nil, nil, nil, fmt.Errorf("merge segment %d: %w", s.id, err)
		}
	}
	return inputs, ps, append(bounds, len(ps)), nil
}

// listSegmentRows lists the segments in tx, in seq order, without their
// filters and chunk starts.
func (lk *lookups) listSegmentRows(ctx context.Context, tx *sql.Tx) ([]segment, error) {
	rows, err := tx.StmtContext(ctx, lk.listSegments).QueryContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("list segments: %w", err)
	}
	defer rows.Close()
	var segs []segment
	for rows.Next() {
		var s segment
		if err := rows.Scan(&s.id, &s.class, &s.first, &s.last, &s.entries, &s.postings); err != nil {
			return nil, fmt.Errorf("list segments: %w", err)
		}
		segs = append(segs, s)
	}
	return segs, rows.Err()
}

// dueMerge returns the first segmentFanIn segments in a row, of segs in
// seq order, that share a class below finalClass, or nil.
func dueMerge(segs []segment) []segment {
	run := 0
	for i, s := range segs {
		if i > 0 && s.class == segs[i-1].class {
			run++
		} else {
			run = 1
		}
		if s.class < finalClass && run == segmentFanIn {
			return segs[i+1-segmentFanIn : i+1]
		}
	}
	return nil
}

// readPostings appends every posting of s to dst, in key order.
func (lk *lookups) readPostings(ctx context.Context, tx *sql.Tx, s segment, dst []posting) ([]posting, error) {
	lo, hi := chunkRange(s.id)
	rows, err := tx.StmtContext(ctx, lk.readChunks).QueryContext(ctx, lo, hi)
	if err != nil {
		return dst, err
	}
	defer rows.Close()
	for rows.Next() {
		var chunk []byte
		if err := rows.Scan(&chunk); err != nil {
			return dst, err
		}
		if dst, err = appendPostings(dst, chunk, s.first); err != nil {
			return dst, err
		}
	}
	return dst, rows.Err()
}

// errMerged says a merge's segments were merged meanwhile by another
// process.
var errMerged = errors.New("merged meanwhile")

// installMerge replaces inputs, contiguous and in order, by one segment of
// the postings ps, unless they are no longer all there. It reports
// whether it replaced them.
func (lk *lookups) installMerge(ctx context.Context, inputs []segment, ps []posting) (bool, error) {
	first, last := inputs[0].first, inputs[len(inputs)-1].last
	err := lk.inWriteTx(ctx, func(tx *sql.Tx) error {
		if err := lk.stillThere(ctx, tx, inputs); err != nil {
			return err
		}
		var entries int64
		for _, s := range inputs {
			entries += s.entries
		}
		if err := lk.writeSegment(ctx, tx, ps, first, last, entries); err != nil {
			return err
		}
		for _, s := range inputs {
			lo, hi := chunkRange(s.id)
			if _, err := tx.StmtContext(ctx, lk.dropChunks).ExecContext(ctx, lo, hi); err != nil {
				return fmt.Errorf("drop merged segment: %w", err)
			}
			if _, err := tx.StmtContext(ctx, lk.dropSegment).ExecContext(ctx, s.id); err != nil {
				return fmt.Errorf("drop merged segment: %w", err)
			}
		}
		if _, err := tx.StmtContext(ctx, lk.bumpGen).ExecContext(ctx); err != nil {
			return fmt.Errorf("merge segments: %w", err)
		}
		return nil
	})
	if errors.Is(err, errMerged) {
		return false, nil
	}
	return err == nil, err
}

// stillThere fails with errMerged unless the segments covering the seqs
// of inputs are inputs.
func (lk *lookups) stillThere(ctx context.Context, tx *sql.Tx, inputs []segment) error {
	rows, err := tx.StmtContext(ctx, lk.segmentsIn).QueryContext(ctx, inputs[0].first, inputs[len(inputs)-1].last)
	if err != nil {
		return fmt.Errorf("merge segments: %w", err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return fmt.Errorf("merge segments: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("merge segments: %w", err)
	}
	if !slices.EqualFunc(ids, inputs, func(id int64, s segment) bool { return id == s.id }) {
		return errMerged
	}
	return nil
}

// inWriteTx runs fn in a write transaction of the index and commits it
// when fn succeeds.
func (lk *lookups) inWriteTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := lk.wdb.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("index: %w", err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("index: %w", err)
	}
	return nil
}
