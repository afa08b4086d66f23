package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/custody-dev/custody"
)

// IndexFile is the name of the lookup index inside the data directory.
//
// The index answers "which entries belong to trace T, have kind K, carry
// ref K=V". It is derived from the entries table and is not evidence, so
// it lives in its own database, is written by its own goroutine while the
// writer commits the next batch, and its commits are not synced to disk:
// the random-key pages it dirties stay out of the ledger's group commit,
// which then only writes the pages the appended rows fill. After a crash
// the index may lag the ledger; it catches up from the entries when
// opened, and is rebuilt from scratch when it is missing or unreadable.
const IndexFile = "index.db"

// indexVersion is the schema version of the index, kept in its
// user_version; an index of another version is rebuilt.
const indexVersion = 3

// indexSchema keeps, for each looked-up field and value of the entries
// (their trace, their kind and each of their refs), the seqs of the
// entries that have it. A field and value is keyed by a 64-bit hash
// (see postingKey): integer keys make the index several times cheaper to
// write than text ones, and the rare hash collision is filtered out by
// checking the entries found.
//
// One update of the index writes one row per key it touches: the seqs of
// that update's entries with the key, from first to last, packed in seqs
// (see appendRun). The index is written under its write lock after
// reading upto, so two rows of one key never hold the same seq and their
// [first, last] ranges never overlap: the row holding a seq is the row of
// its key with the greatest first <= seq.
//
// Hashed keys scatter the rows of an update over the whole table: an
// update dirties about one page per row once the table outgrows the
// update, and the cost of an append would grow with the ledger. So rows
// are written in two levels. New rows go to recent, a table small enough
// that an update dirties few pages; each update then moves one key range
// of recent, a slice of the key space, into runs, where the moved rows
// land in neighbouring pages. The rows of kinds, a few keys with long
// histories, go straight to runs: they land at the end of their key's
// run of rows. A lookup reads both levels.
const indexSchema = `
CREATE TABLE index_meta (
	id   INTEGER PRIMARY KEY CHECK (id = 1),
	upto INTEGER NOT NULL -- every entry with seq <= upto is indexed
);
INSERT INTO index_meta (id, upto) VALUES (1, 0);
CREATE TABLE runs (
	key   INTEGER NOT NULL,
	first INTEGER NOT NULL,
	last  INTEGER NOT NULL,
	seqs  BLOB    NOT NULL,
	PRIMARY KEY (key, first)
) WITHOUT ROWID;
CREATE TABLE recent (
	key   INTEGER NOT NULL,
	first INTEGER NOT NULL,
	last  INTEGER NOT NULL,
	seqs  BLOB    NOT NULL,
	PRIMARY KEY (key, first)
) WITHOUT ROWID;
PRAGMA user_version = 3;
`

// Posting fields.
const (
	fieldTrace = "t"
	fieldKind  = "k"
	fieldRef   = "r:" // followed by the ref's key
)

// postingKey returns the key of the posting for field and value: the first
// eight bytes of SHA-256(field NUL value). A cryptographic hash keeps
// anyone choosing trace ids or refs from making collisions on purpose.
func postingKey(field, value string) int64 {
	// One buffer on the stack for the usual short field and value: no
	// hash.Hash nor conversions to allocate for every posting.
	var stack [128]byte
	b := append(append(append(stack[:0], field...), 0), value...)
	sum := sha256.Sum256(b)
	return int64(binary.BigEndian.Uint64(sum[:8]))
}

const (
	// catchUpChunk is how many entries one catch-up transaction indexes.
	catchUpChunk = 4096
	// indexBatch is how many waiting rows make the indexer commit.
	indexBatch = 2048
	// indexDelay is the longest a row waits to be indexed when no reader
	// asks for it.
	indexDelay = 50 * time.Millisecond
	// indexRetry is how often a failed index retries on its own.
	indexRetry = time.Second
	// defaultIndexRecent is how many rows the recent level of the
	// index holds before updates start moving them to the main level.
	defaultIndexRecent = 4096
	// mergeSlices is how many key ranges the key space is cut into: an
	// update moves one, so a row waits at most mergeSlices updates
	// once recent is full.
	mergeSlices = 16
)

// indexRow is what the index keeps of an entry, copied out of it so that
// the caller of Append owns its entry again once acknowledged.
type indexRow struct {
	seq         int64
	trace, kind string
	refs        []string // key, value, key, value, ...
}

func rowOf(e *custody.Entry) indexRow {
	r := indexRow{seq: e.Seq, trace: e.Trace, kind: e.Kind, refs: make([]string, 0, 2*len(e.Refs))}
	for k, v := range e.Refs {
		r.refs = append(r.refs, k, v)
	}
	return r
}

// lookups is the index database: a write connection owned by the indexer
// goroutine (and by Open before it starts) and a read pool.
type lookups struct {
	wdb, rdb *sql.DB
	insert   *multiInsert // into recent
	// insertMain inserts into the main level, for the rows of kinds.
	insertMain *multiInsert
	getUpto    *sql.Stmt
	setUpto    *sql.Stmt
	// runsAfter and runAt are the lookups' statements, on the read pool.
	runsAfter, runAt *sql.Stmt
	// merge is the rolling move of recent rows to the main level.
	merge merger
	// log reports a long catch-up; never nil.
	log   *slog.Logger
	args  []any    // reused by every update
	runs  runGroup // the rows of trace and ref keys, reused by every update
	kinds runGroup // the rows of kind keys, reused by every update
	// feed carries the rows of each committed batch to the indexer.
	feed chan []indexRow
	// poke asks the indexer to commit what it holds: a reader waits.
	poke    chan struct{}
	stopped chan struct{}

	mu      sync.Mutex
	upto    int64         // every entry up to upto is indexed
	err     error         // the last update failed with err
	changed chan struct{} // closed and replaced when upto or err change
}

// openLookups opens the index in dir and brings it up to the entries of
// main, rebuilding it when it cannot be used as it is. An index that
// fails for want of a resource (a full or failing disk, a file that
// cannot be opened, a lock) is kept as it is: a rebuild would not help,
// and would throw away what a large ledger takes minutes to index again.
func openLookups(ctx context.Context, dir string, main *sql.DB, opts Options) (*lookups, error) {
	path := filepath.Join(dir, IndexFile)
	lk, err := tryOpenLookups(ctx, path, main, opts)
	if err != nil && resourceFailed(err) {
		return nil, fmt.Errorf("open index %s (it is derived from the ledger: if this persists, remove it and the store rebuilds it): %w", path, err)
	}
	if err != nil {
		opts.Logger.Info("rebuilding the lookup index", "file", path, "reason", err)
		removeDatabase(path)
		if lk, err = tryOpenLookups(ctx, path, main, opts); err != nil {
			return nil, fmt.Errorf("rebuild index: %w", err)
		}
	}
	return lk, nil
}

func indexDSN(path string, extra url.Values) string {
	q := url.Values{
		"_busy_timeout": {fmt.Sprint(busyTimeout.Milliseconds())},
		"_journal_mode": {"WAL"},
		// NORMAL in WAL mode: commits are not synced, checkpoints are,
		// so a crash can lose recent index updates but not corrupt it.
		"_synchronous": {"NORMAL"},
	}
	maps.Copy(q, extra)
	return "file:" + filepath.ToSlash(path) + "?" + q.Encode()
}

func tryOpenLookups(ctx context.Context, path string, main *sql.DB, opts Options) (*lookups, error) {
	wdb, err := sql.Open("sqlite", indexDSN(path, url.Values{"_txlock": {"immediate"}}))
	if err != nil {
		return nil, err
	}
	wdb.SetMaxOpenConns(1)
	wdb.SetConnMaxLifetime(0)
	lk := &lookups{wdb: wdb, feed: make(chan []indexRow, queueSize), poke: make(chan struct{}, 1), stopped: make(chan struct{}), changed: make(chan struct{})}
	lk.merge.limit = opts.indexRecent
	lk.log = opts.Logger
	if err := lk.init(ctx); err != nil {
		lk.close()
		return nil, err
	}
	if lk.rdb, err = sql.Open("sqlite", indexDSN(path, url.Values{"_query_only": {"1"}})); err != nil {
		lk.close()
		return nil, err
	}
	if lk.runsAfter, err = lk.rdb.PrepareContext(ctx, runsAfterQuery); err != nil {
		lk.close()
		return nil, fmt.Errorf("prepare index lookup: %w", err)
	}
	if lk.runAt, err = lk.rdb.PrepareContext(ctx, runAtQuery); err != nil {
		lk.close()
		return nil, fmt.Errorf("prepare index lookup: %w", err)
	}
	if err := lk.update(ctx, main, nil); err != nil {
		lk.close()
		return nil, err
	}
	return lk, nil
}

// init creates the schema of a new index, refuses one of another version
// and prepares the statements.
func (lk *lookups) init(ctx context.Context) error {
	var v int
	if err := lk.wdb.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return fmt.Errorf("read index version: %w", err)
	}
	switch v {
	case 0:
		if _, err := lk.wdb.ExecContext(ctx, "BEGIN IMMEDIATE;"+indexSchema+"COMMIT;"); err != nil {
			return fmt.Errorf("create index: %w", err)
		}
	case indexVersion:
	default:
		return fmt.Errorf("index version %d, want %d", v, indexVersion)
	}
	var err error
	// OR IGNORE: a statement that cannot abort half-way needs no statement
	// journal, which would otherwise copy every page it touches; and
	// indexing an entry twice is harmless.
	if lk.insert, err = prepareMultiInsert(ctx, lk.wdb, "OR IGNORE INTO recent", runColumns...); err != nil {
		return err
	}
	if lk.insertMain, err = prepareMultiInsert(ctx, lk.wdb, "OR IGNORE INTO runs", runColumns...); err != nil {
		return err
	}
	if err := lk.merge.prepare(ctx, lk.wdb); err != nil {
		return err
	}
	if lk.getUpto, err = lk.wdb.PrepareContext(ctx, `SELECT upto FROM index_meta`); err != nil {
		return fmt.Errorf("prepare index: %w", err)
	}
	if lk.setUpto, err = lk.wdb.PrepareContext(ctx, `UPDATE index_meta SET upto = ?`); err != nil {
		return fmt.Errorf("prepare index: %w", err)
	}
	return nil
}

// run indexes the batches fed to it until feed is closed; main is read
// to catch up on entries the feed did not carry. Rows are committed in
// bulk, when indexBatch of them wait, when one has waited indexDelay, or
// at once when a reader needs them: one transaction over many batches
// dirties each page of a busy trace once rather than once per batch.
func (lk *lookups) run(main *sql.DB) {
	defer close(lk.stopped)
	ctx := context.Background()
	retry := time.NewTicker(indexRetry)
	defer retry.Stop()
	delay := time.NewTimer(indexDelay)
	delay.Stop()
	var pending []indexRow
	flush := func() {
		for _, b := range drain(nil, lk.feed, queueSize) {
			pending = append(pending, b...)
		}
		if len(pending) > 0 {
			lk.update(ctx, main, pending)
			clear(pending)
			pending = pending[:0]
		}
	}
	for {
		select {
		case batch, ok := <-lk.feed:
			if !ok {
				flush()
				return
			}
			if len(pending) == 0 {
				delay.Reset(indexDelay)
			}
			if pending = append(pending, batch...); len(pending) >= indexBatch {
				flush()
			}
		case <-lk.poke:
			flush()
			lk.update(ctx, main, nil) // another process may have appended
		case <-delay.C:
			flush()
		case <-retry.C:
			if lk.failed() {
				lk.update(ctx, main, nil)
			}
		}
	}
}

// update indexes rows, the entries just committed (nil to only catch up),
// adding from main any entry the index misses before or between them
// (another process's appends, a failed update), and publishes the outcome
// to waiting readers.
func (lk *lookups) update(ctx context.Context, main *sql.DB, rows []indexRow) error {
	var upto int64
	var err error
	if rows == nil {
		upto, err = lk.catchUp(ctx, main)
	} else {
		upto, err = lk.inTx(ctx, func(tx *sql.Tx, upto int64) (int64, error) {
			all, err := withMissing(ctx, main, upto, rows)
			if err != nil {
				return upto, err
			}
			return lk.addRows(ctx, tx, upto, all)
		})
	}
	lk.mu.Lock()
	defer lk.mu.Unlock()
	if err == nil {
		lk.upto = upto
	}
	lk.err = err
	close(lk.changed)
	lk.changed = make(chan struct{})
	return err
}

func (lk *lookups) failed() bool {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	return lk.err != nil
}

// withMissing returns the rows beyond upto, in seq order, with the rows of
// any entries missing before or between them read from main.
func withMissing(ctx context.Context, main *sql.DB, upto int64, rows []indexRow) ([]indexRow, error) {
	var out []indexRow
	for _, r := range rows {
		if r.seq <= upto {
			continue
		}
		for upto < r.seq-1 {
			missing, err := readRows(ctx, main, upto, r.seq-1)
			if err != nil || len(missing) == 0 {
				return nil, errors.Join(err, fmt.Errorf("entries %d-%d are missing", upto+1, r.seq-1))
			}
			out = append(out, missing...)
			upto = missing[len(missing)-1].seq
		}
		out = append(out, r)
		upto = r.seq
	}
	return out, nil
}

// catchUp indexes every entry of main the index misses, one chunk a
// transaction, and returns the new upto. A catch-up of more than one chunk
// (a new or rebuilt index, or one far behind) is logged when it starts,
// every progressEvery while it runs, and when it ends.
func (lk *lookups) catchUp(ctx context.Context, main *sql.DB) (int64, error) {
	var p *catchUpProgress
	for {
		n := 0
		upto, err := lk.inTx(ctx, func(tx *sql.Tx, upto int64) (int64, error) {
			rows, err := readRows(ctx, main, upto, math.MaxInt64)
			if err != nil {
				return upto, err
			}
			n = len(rows)
			return lk.addRows(ctx, tx, upto, rows)
		})
		if err != nil || n < catchUpChunk {
			p.done(upto, err)
			return upto, err
		}
		if p == nil {
			p = lk.startProgress(ctx, main, upto-int64(n))
		}
		p.report(upto)
	}
}

// progressEvery is how often a long catch-up reports how far it got.
const progressEvery = 5 * time.Second

// catchUpProgress reports a long catch-up of the index.
type catchUpProgress struct {
	log         *slog.Logger
	from, total int64
	start, last time.Time
}

// startProgress logs the start of a catch-up from seq from.
func (lk *lookups) startProgress(ctx context.Context, main *sql.DB, from int64) *catchUpProgress {
	var total int64
	// Only for the message: without it the progress has no total.
	_ = main.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM entries`).Scan(&total)
	now := time.Now()
	p := &catchUpProgress{log: lk.log, from: from, total: total, start: now, last: now}
	p.log.Info("indexing the ledger for lookups", "from_seq", from+1, "to_seq", total)
	return p
}

func (p *catchUpProgress) report(upto int64) {
	if time.Since(p.last) < progressEvery {
		return
	}
	p.last = time.Now()
	p.log.Info("indexing the ledger for lookups", "indexed_to_seq", upto, "of", p.total)
}

// done logs the end of a catch-up; p is nil when the catch-up was short.
func (p *catchUpProgress) done(upto int64, err error) {
	if p == nil {
		return
	}
	elapsed := time.Since(p.start).Round(time.Millisecond)
	if err != nil {
		p.log.Error("indexing the ledger failed; lookups are refused until it succeeds", "indexed_to_seq", upto, "err", err)
		return
	}
	p.log.Info("indexed the ledger for lookups", "entries", upto-p.from, "elapsed", elapsed)
}

// inTx runs fn in an index transaction with the stored upto, stores the
// upto fn returns and returns it once committed. When fn fails nothing is
// stored.
func (lk *lookups) inTx(ctx context.Context, fn func(tx *sql.Tx, upto int64) (int64, error)) (int64, error) {
	tx, err := lk.wdb.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("index: %w", err)
	}
	defer tx.Rollback()
	var upto int64
	if err := tx.StmtContext(ctx, lk.getUpto).QueryRowContext(ctx).Scan(&upto); err != nil {
		return 0, fmt.Errorf("index: %w", err)
	}
	next, err := fn(tx, upto)
	if err != nil {
		return upto, fmt.Errorf("index: %w", err)
	}
	if next != upto {
		if _, err := tx.StmtContext(ctx, lk.setUpto).ExecContext(ctx, next); err != nil {
			return upto, fmt.Errorf("index: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return upto, fmt.Errorf("index: %w", err)
	}
	return next, nil
}

// readRows reads the index rows of the entries of main with after < seq <=
// until, at most catchUpChunk of them.
func readRows(ctx context.Context, main *sql.DB, after, until int64) ([]indexRow, error) {
	const sel = `SELECT seq, trace, kind, refs FROM entries WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?`
	rows, err := main.QueryContext(ctx, sel, after, until, catchUpChunk)
	if err != nil {
		return nil, fmt.Errorf("read entries: %w", err)
	}
	defer rows.Close()
	var out []indexRow
	for rows.Next() {
		var e custody.Entry
		var refs []byte
		if err := rows.Scan(&e.Seq, &e.Trace, &e.Kind, &refs); err != nil {
			return nil, fmt.Errorf("read entries: %w", err)
		}
		if err := json.Unmarshal(refs, &e.Refs); err != nil {
			return nil, fmt.Errorf("entry %d: refs: %w", e.Seq, err)
		}
		out = append(out, rowOf(&e))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read entries: %w", err)
	}
	return out, nil
}

// addRows indexes the rows beyond upto and returns the new upto.
func (lk *lookups) addRows(ctx context.Context, tx *sql.Tx, upto int64, rows []indexRow) (int64, error) {
	lk.runs.reset()
	lk.kinds.reset()
	next := upto
	for _, r := range rows {
		if r.seq <= upto {
			continue
		}
		lk.runs.add(postingKey(fieldTrace, r.trace), r.seq)
		lk.kinds.add(postingKey(fieldKind, r.kind), r.seq)
		for i := 0; i+1 < len(r.refs); i += 2 {
			lk.runs.add(postingKey(fieldRef+r.refs[i], r.refs[i+1]), r.seq)
		}
		next = r.seq
	}
	lk.kinds.moveShared(&lk.runs)
	// A kind has few values, each with many entries: its rows go
	// straight to the end of their key's rows in the main level, a few
	// pages, and need no merge.
	if err := lk.insertRuns(ctx, tx, lk.insertMain, &lk.kinds); err != nil {
		return upto, err
	}
	if err := lk.insertRuns(ctx, tx, lk.insert, &lk.runs); err != nil {
		return upto, err
	}
	lk.merge.added(len(lk.runs.keys))
	if err := lk.merge.step(ctx, tx); err != nil {
		return upto, err
	}
	return next, nil
}

// runColumns are the columns of a row of the index, in the order
// insertRuns binds them.
var runColumns = []string{"key", "first", "last", "seqs"}

// insertRuns inserts the rows of g with m, in key order: each insert lands
// next to the one before, so SQLite walks the tree once rather than
// jumping to a random leaf per row.
func (lk *lookups) insertRuns(ctx context.Context, tx *sql.Tx, m *multiInsert, g *runGroup) error {
	slices.Sort(g.keys)
	args := lk.args[:0]
	for _, k := range g.keys {
		seqs := g.seqs[k]
		args = append(args, k, seqs[0], seqs[len(seqs)-1], appendRun(nil, seqs))
	}
	err := m.exec(ctx, tx, args)
	clear(args)
	lk.args = args[:0]
	if err != nil {
		return fmt.Errorf("add postings: %w", err)
	}
	return nil
}

// runGroup gathers the seqs of one update by key.
type runGroup struct {
	keys []int64           // in the order first seen
	seqs map[int64][]int64 // by key, ascending
}

func (g *runGroup) reset() {
	g.keys = g.keys[:0]
	if g.seqs == nil {
		g.seqs = map[int64][]int64{}
	}
	clear(g.seqs)
}

// add records that the entry at seq has key; seqs come in ascending
// order. A key met twice for one entry (two fields whose hashes collide)
// is kept once.
func (g *runGroup) add(key, seq int64) {
	seqs, ok := g.seqs[key]
	if !ok {
		g.keys = append(g.keys, key)
	} else if seqs[len(seqs)-1] == seq {
		return
	}
	g.seqs[key] = append(seqs, seq)
}

// moveShared moves into to the seqs of the keys g shares with it, so that
// one update writes one row per key even when the hashes of a kind and of
// a trace or ref collide: two rows of one key with the same first seq
// would clash in the table, and one would be dropped.
func (g *runGroup) moveShared(to *runGroup) {
	keys := g.keys[:0]
	for _, k := range g.keys {
		theirs, ok := to.seqs[k]
		if !ok {
			keys = append(keys, k)
			continue
		}
		to.seqs[k] = slices.Compact(slices.Sorted(slices.Values(append(theirs, g.seqs[k]...))))
		delete(g.seqs, k)
	}
	g.keys = keys
}

// appendRun appends to dst the packed form of seqs, ascending: the first
// seq, then each one's distance from the one before, as uvarints.
func appendRun(dst []byte, seqs []int64) []byte {
	var prev int64
	for _, s := range seqs {
		dst = binary.AppendUvarint(dst, uint64(s-prev))
		prev = s
	}
	return dst
}

// readRun decodes a row's packed seqs into dst.
func readRun(dst []int64, b []byte) ([]int64, error) {
	var prev int64
	for len(b) > 0 {
		d, n := binary.Uvarint(b)
		if n <= 0 {
			return dst, errors.New("index: a row's seqs are corrupt")
		}
		prev += int64(d)
		dst = append(dst, prev)
		b = b[n:]
	}
	return dst, nil
}

// waitFor waits until every entry up to seq is indexed. It fails at once
// while the index is failing: lookups are refused rather than missing
// entries.
func (lk *lookups) waitFor(ctx context.Context, seq int64) error {
	for {
		lk.mu.Lock()
		upto, err, changed := lk.upto, lk.err, lk.changed
		lk.mu.Unlock()
		switch {
		case upto >= seq:
			return nil
		case err != nil:
			return err
		}
		select {
		case lk.poke <- struct{}{}:
		default: // already asked
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// seqs returns the seqs of the entries matching q's filters, in order,
// after q.After and at most q.Limit of them. The most selective filter (a
// ref, then the trace, then the kind) drives: its rows are read in order
// and each of their seqs is looked up in the rows of the other filters.
// All reads share one transaction, so a row moving between levels is
// seen exactly once.
func (lk *lookups) seqs(ctx context.Context, q custody.Query) ([]int64, error) {
	keys := queryKeys(q)
	tx, err := lk.rdb.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	after := max(q.After, 0)
	at := tx.StmtContext(ctx, lk.runAt)
	others := make([]runFinder, len(keys)-1)
	for i := range others {
		others[i] = newRunFinder(at, keys[i+1])
	}
	var out []int64
	// take adds the seqs of one row of the driving key that match the
	// other keys, and reports whether the limit is reached.
	take := func(run []int64) (bool, error) {
	seqs:
		for _, seq := range run {
			if seq <= after {
				continue
			}
			for i := range others {
				ok, err := others[i].holds(ctx, seq)
				if err != nil {
					return false, err
				}
				if !ok {
					continue seqs
				}
			}
			if out = append(out, seq); len(out) == q.Limit {
				return true, nil
			}
		}
		return false, nil
	}
	// First the row that holds after+1 but starts before it, if any.
	drive := newRunFinder(at, keys[0])
	if _, err := drive.holds(ctx, after+1); err != nil {
		return nil, err
	}
	if drive.first <= after && drive.last > after {
		if done, err := take(drive.seqs); done || err != nil {
			return out, err
		}
	}
	rows, err := tx.StmtContext(ctx, lk.runsAfter).QueryContext(ctx, keys[0], after)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var run []int64
	for rows.Next() {
		var first int64
		var b []byte
		if err := rows.Scan(&first, &b); err != nil {
			return nil, err
		}
		if run, err = readRun(run[:0], b); err != nil {
			return nil, err
		}
		if done, err := take(run); done || err != nil {
			return out, err
		}
	}
	return out, rows.Err()
}

// queryKeys returns the keys of q's filters, the most selective first: a
// ref, then the trace, then the kind.
func queryKeys(q custody.Query) []int64 {
	var keys []int64
	for _, k := range slices.Sorted(maps.Keys(q.Refs)) {
		keys = append(keys, postingKey(fieldRef+k, q.Refs[k]))
	}
	if q.Trace != "" {
		keys = append(keys, postingKey(fieldTrace, q.Trace))
	}
	if q.Kind != "" {
		keys = append(keys, postingKey(fieldKind, q.Kind))
	}
	return keys
}

// runsAfterQuery selects the packed seqs of the rows of key ?1 that start
// after ?2, in order, from both levels. (The one row that may start at or
// before ?2 and end after it is found with runAtQuery: as an arm of this
// query it would make SQLite sort the rows rather than merge two ordered
// scans.)
const runsAfterQuery = `SELECT first, seqs FROM runs WHERE key = ?1 AND first > ?2
	UNION ALL SELECT first, seqs FROM recent WHERE key = ?1 AND first > ?2
	ORDER BY first`

// runAtQuery selects the row of key ?1 whose range holds seq ?2, from either
// level: rows of one key never overlap.
const runAtQuery = `SELECT first, last, seqs FROM (
	SELECT * FROM (SELECT first, last, seqs FROM runs WHERE key = ?1 AND first <= ?2 ORDER BY first DESC LIMIT 1)
	UNION ALL SELECT * FROM (SELECT first, last, seqs FROM recent WHERE key = ?1 AND first <= ?2 ORDER BY first DESC LIMIT 1)
) WHERE last >= ?2`

// runFinder answers whether the entry at a seq has a key, for ascending
// seqs: it keeps the last row it read, which usually holds the next seq
// asked for too.
type runFinder struct {
	at          *sql.Stmt // runAtQuery in the lookup's transaction
	key         int64
	first, last int64 // the range of seqs; last < first when none is read
	seqs        []int64
}

func newRunFinder(at *sql.Stmt, key int64) runFinder {
	return runFinder{at: at, key: key, first: 1, last: 0}
}

// holds reports whether the entry at seq has f's key, and leaves in f the
// row whose range holds seq, if any.
func (f *runFinder) holds(ctx context.Context, seq int64) (bool, error) {
	if seq < f.first || seq > f.last {
		var b []byte
		err := f.at.QueryRowContext(ctx, f.key, seq).Scan(&f.first, &f.last, &b)
		if errors.Is(err, sql.ErrNoRows) {
			f.first, f.last = 1, 0
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if f.seqs, err = readRun(f.seqs[:0], b); err != nil {
			return false, err
		}
	}
	_, found := slices.BinarySearch(f.seqs, seq)
	return found, nil
}

// matches reports whether e is selected by q's filters: the index is keyed
// by hashes, so what it finds is checked.
func matches(e *custody.Entry, q custody.Query) bool {
	if (q.Trace != "" && e.Trace != q.Trace) || (q.Kind != "" && e.Kind != q.Kind) {
		return false
	}
	for k, v := range q.Refs {
		if got, ok := e.Refs[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// seqList renders seqs as a JSON array, for json_each.
func seqList(seqs []int64) string {
	b := make([]byte, 0, 8*len(seqs)+2)
	b = append(b, '[')
	for i, s := range seqs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, s, 10)
	}
	return string(append(b, ']'))
}

func (lk *lookups) close() error {
	var errs []error
	for _, m := range []*multiInsert{lk.insert, lk.insertMain} {
		if m != nil {
			errs = append(errs, m.close())
		}
	}
	for _, st := range []*sql.Stmt{lk.getUpto, lk.setUpto, lk.merge.move, lk.merge.drop, lk.runsAfter, lk.runAt} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	for _, db := range []*sql.DB{lk.rdb, lk.wdb} {
		if db != nil {
			errs = append(errs, db.Close())
		}
	}
	return errors.Join(errs...)
}
