package sqlite

import (
	"cmp"
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
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/queue"
)

// IndexFile is the name of the lookup index inside the data directory.
//
// The index answers "which entries belong to trace T, have kind K, carry
// ref K=V". It is derived from the entries table and is not evidence, so
// it lives in its own database, is written by its own goroutine while the
// writer commits the next batch, and its commits are not synced to disk:
// its writes stay out of the ledger's group commit, which then only
// writes the pages the appended rows fill. After a crash
// the index may lag the ledger; it catches up from the entries when
// opened, and is rebuilt from scratch when it is missing or unreadable.
const IndexFile = "index.db"

// indexVersion is the schema version of the index, kept in its
// user_version; an index of another version is rebuilt.
const indexVersion = 4

// indexSchema keeps the postings of the entries (see segment): for each
// looked-up field and value of an entry (its trace, its kind and each of
// its refs), keyed by a 64-bit hash (see postingKey), the seqs of the
// entries that have it. Integer keys make the index several times
// cheaper to write than text ones, and the rare hash collision is
// filtered out by checking the entries found.
//
// Each index update writes one segment, the postings of the entries it
// indexes; the merger (see merges) replaces segmentFanIn segments in a
// row that share a class (see segmentClass) by one. Segments are written whole and
// in key order, so an update writes about as many pages as its postings
// fill, however large the index grows: posting rows scattered over one
// table by their hashed keys would dirty a page per row. The segments
// hold contiguous ranges of entries; in order of first they cover every
// entry up to upto. gen counts the transactions that changed them, so
// that a reader rereads the list of segments only when it changed.
const indexSchema = `
CREATE TABLE index_meta (
	id   INTEGER PRIMARY KEY CHECK (id = 1),
	upto INTEGER NOT NULL, -- every entry with seq <= upto is indexed
	gen  INTEGER NOT NULL
);
INSERT INTO index_meta (id, upto, gen) VALUES (1, 0, 0);
CREATE TABLE segments (
	id      INTEGER PRIMARY KEY AUTOINCREMENT,
	class   INTEGER NOT NULL,
	first   INTEGER NOT NULL,
	last    INTEGER NOT NULL,
	entries INTEGER NOT NULL,
	postings INTEGER NOT NULL,
	filter  BLOB    NOT NULL, -- Bloom filter of its keys
	firsts  BLOB    NOT NULL  -- the first key and seq of each chunk
);
CREATE TABLE chunks (
	id   INTEGER PRIMARY KEY, -- segment << 32 | chunk number
	data BLOB    NOT NULL
);
PRAGMA user_version = 4;
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
	// The writing statements, on wdb: the indexer's and the merger's.
	getUpto, setUpto, bumpGen, addSegment, segmentsIn, dropSegment, dropChunks *sql.Stmt
	addChunks                                                                  *multiInsert
	// The reading statements, on rdb: the lookups' and the merger's.
	getGen, listSegments, readSegment, readChunk, readChunks *sql.Stmt
	// perChunk is how many keys a chunk holds; tests make it small.
	perChunk int
	// log reports a long catch-up and failed merges; never nil.
	log      *slog.Logger
	postings []posting // reused by every update
	// merges runs the merges of segments; see runMerges.
	merges merges
	// feed carries the rows of each committed batch to the indexer.
	feed chan []indexRow
	// poke asks the indexer to commit what it holds: a reader waits.
	poke    chan struct{}
	stopped chan struct{}

	mu      sync.Mutex
	upto    int64         // every entry up to upto is indexed
	err     error         // the last update failed with err
	changed chan struct{} // closed and replaced when upto or err change

	// listed is the list of segments lookups read last, as of gen.
	listed struct {
		sync.Mutex
		gen  int64
		segs []*segment
	}
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
	lk.perChunk = cmp.Or(opts.indexChunkKeys, chunkKeys)
	lk.log = opts.Logger
	if err := lk.init(ctx); err != nil {
		lk.close()
		return nil, err
	}
	if lk.rdb, err = sql.Open("sqlite", indexDSN(path, url.Values{"_query_only": {"1"}})); err != nil {
		lk.close()
		return nil, err
	}
	if err := prepareAll(ctx, lk.rdb, map[**sql.Stmt]string{
		&lk.getGen:       `SELECT gen FROM index_meta`,
		&lk.listSegments: `SELECT id, class, first, last, entries, postings FROM segments ORDER BY first`,
		&lk.readSegment:  `SELECT filter, firsts FROM segments WHERE id = ?`,
		&lk.readChunk:    `SELECT data FROM chunks WHERE id = ?`,
		&lk.readChunks:   `SELECT data FROM chunks WHERE id BETWEEN ? AND ? ORDER BY id`,
	}); err != nil {
		lk.close()
		return nil, err
	}
	lk.startMerges(opts.mergeHook)
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
	if lk.addChunks, err = prepareMultiInsert(ctx, lk.wdb, "INTO chunks", "id", "data"); err != nil {
		return err
	}
	return prepareAll(ctx, lk.wdb, map[**sql.Stmt]string{
		&lk.getUpto: `SELECT upto FROM index_meta`,
		&lk.setUpto: `UPDATE index_meta SET upto = ?, gen = gen + 1`,
		&lk.bumpGen: `UPDATE index_meta SET gen = gen + 1`,
		&lk.addSegment: `INSERT INTO segments (class, first, last, entries, postings, filter, firsts)
			VALUES (?, ?, ?, ?, ?, ?, ?)`,
		&lk.segmentsIn:  `SELECT id FROM segments WHERE first >= ? AND last <= ? ORDER BY first`,
		&lk.dropSegment: `DELETE FROM segments WHERE id = ?`,
		&lk.dropChunks:  `DELETE FROM chunks WHERE id BETWEEN ? AND ?`,
	})
}

// prepareAll prepares each statement of stmts on db into its place.
func prepareAll(ctx context.Context, db *sql.DB, stmts map[**sql.Stmt]string) error {
	for to, q := range stmts {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("prepare index statement %q: %w", q, err)
		}
		*to = st
	}
	return nil
}

// run indexes the batches fed to it until feed is closed; main is read
// to catch up on entries the feed did not carry. Rows are committed in
// bulk, when indexBatch of them wait, when one has waited indexDelay, or
// at once when a reader needs them: one segment of many batches costs
// less to write, and to merge later, than one a batch.
func (lk *lookups) run(main *sql.DB) {
	defer close(lk.stopped)
	ctx := context.Background()
	retry := time.NewTicker(indexRetry)
	defer retry.Stop()
	delay := time.NewTimer(indexDelay)
	delay.Stop()
	var pending []indexRow
	flush := func() {
		for _, b := range queue.Drain(nil, lk.feed, queueSize) {
			pending = append(pending, b...)
		}
		if len(pending) > 0 {
			lk.updateLogged(ctx, main, pending)
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
			lk.updateLogged(ctx, main, nil) // another process may have appended
		case <-delay.C:
			flush()
		case <-retry.C:
			if lk.failed() {
				lk.updateLogged(ctx, main, nil)
			}
		}
	}
}

// update indexes rows, the entries just committed (nil to only catch up),
// adding from main any entry the index misses before or between them
// (another process's appends, a failed update), and publishes the outcome
// to waiting readers.
func (lk *lookups) update(ctx context.Context, main *sql.DB, rows []indexRow) error {
	upto, err := lk.apply(ctx, main, rows)
	lk.publish(upto, err)
	return err
}

// apply does update's work and returns the seq indexed up to.
func (lk *lookups) apply(ctx context.Context, main *sql.DB, rows []indexRow) (int64, error) {
	if rows == nil {
		return lk.catchUp(ctx, main)
	}
	return lk.inTx(ctx, func(tx *sql.Tx, upto int64) (int64, error) {
		all, err := withMissing(ctx, main, upto, rows)
		if err != nil {
			return upto, err
		}
		return lk.addRows(ctx, tx, upto, all)
	})
}

// publish records an update's outcome and wakes the readers waiting on it.
func (lk *lookups) publish(upto int64, err error) {
	if err == nil {
		lk.merges.wake()
	}
	lk.mu.Lock()
	defer lk.mu.Unlock()
	if err == nil {
		lk.upto = upto
	}
	lk.err = err
	close(lk.changed)
	lk.changed = make(chan struct{})
}

// updateLogged runs update and logs when the index starts failing and
// when it works again: lookups are refused in between. The log line comes
// before the outcome is published, so a reader refused for a failing
// index finds the reason already logged.
func (lk *lookups) updateLogged(ctx context.Context, main *sql.DB, rows []indexRow) {
	was := lk.failed()
	upto, err := lk.apply(ctx, main, rows)
	switch {
	case err != nil && !was:
		lk.log.Error("the lookup index failed: lookups are refused until it catches up, which it tries every second", "err", err)
	case err == nil && was:
		lk.log.Info("the lookup index works again")
	}
	lk.publish(upto, err)
}

// IndexStatus says how far the lookup index has got.
type IndexStatus struct {
	// Indexed is the seq up to which every entry is indexed.
	Indexed int64
	// Segments is how many segments hold the postings.
	Segments int64
	// Failing is why the index's last update failed, nil when it works:
	// lookups are refused meanwhile.
	Failing error
}

// IndexStatus reports how far the lookup index has got.
func (db *DB) IndexStatus(ctx context.Context) (IndexStatus, error) {
	lk := db.lk
	lk.mu.Lock()
	s := IndexStatus{Indexed: lk.upto, Failing: lk.err}
	lk.mu.Unlock()
	if err := lk.rdb.QueryRowContext(ctx, `SELECT count(*) FROM segments`).Scan(&s.Segments); err != nil {
		return s, unavailable("read the lookup index's status", err)
	}
	return s, nil
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

// addRows indexes the rows beyond upto, as one new segment, and returns
// the new upto.
func (lk *lookups) addRows(ctx context.Context, tx *sql.Tx, upto int64, rows []indexRow) (int64, error) {
	ps := lk.postings[:0]
	next := upto
	for _, r := range rows {
		if r.seq <= upto {
			continue
		}
		ps = append(ps, posting{postingKey(fieldTrace, r.trace), r.seq}, posting{postingKey(fieldKind, r.kind), r.seq})
		for i := 0; i+1 < len(r.refs); i += 2 {
			ps = append(ps, posting{postingKey(fieldRef+r.refs[i], r.refs[i+1]), r.seq})
		}
		next = r.seq
	}
	lk.postings = ps[:0]
	if next == upto {
		return upto, nil
	}
	if err := lk.writeSegment(ctx, tx, sortPostings(ps), upto+1, next, next-upto); err != nil {
		return upto, err
	}
	return next, nil
}

// writeSegment writes the segment of the entries first to last, entries
// of them, whose sorted postings are ps.
func (lk *lookups) writeSegment(ctx context.Context, tx *sql.Tx, ps []posting, first, last, entries int64) error {
	chunks, firsts, filter := encodeSegment(ps, first, lk.perChunk)
	res, err := tx.StmtContext(ctx, lk.addSegment).ExecContext(ctx,
		segmentClass(entries), first, last, entries, len(ps), filter.bytes(), encodeFirsts(firsts))
	if err != nil {
		return fmt.Errorf("add segment: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return fmt.Errorf("add segment: %w", err)
	}
	args := make([]any, 0, 2*len(chunks))
	for n, c := range chunks {
		args = append(args, chunkID(id, n), c)
	}
	if err := lk.addChunks.exec(ctx, tx, args); err != nil {
		return fmt.Errorf("add segment: %w", err)
	}
	return nil
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

// seqs returns the seqs of the entries that may match q's filters, in
// order, after q.After and at most q.Limit of them: the index is keyed by
// hashes, and a kind is not checked when another filter is set, so the
// caller checks the entries. The most selective filter (a ref, then the
// trace) drives: its seqs in each segment are narrowed to those the other
// filters have in the same segment.
func (lk *lookups) seqs(ctx context.Context, q custody.Query) ([]int64, error) {
	keys := queryKeys(q)
	tx, err := lk.rdb.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	segs, err := lk.segments(ctx, tx)
	if err != nil {
		return nil, err
	}
	after := max(q.After, 0)
	read := tx.StmtContext(ctx, lk.readChunk)
	var out, found, other []int64
	// Segments are in seq order and contiguous: skip those before after.
	start := sort.Search(len(segs), func(i int) bool { return segs[i].last > after })
	for _, s := range segs[start:] {
		want := seqRange{after: after}
		if len(keys) == 1 {
			want.limit = int64(q.Limit - len(out))
		}
		if found, err = lk.segmentSeqs(ctx, read, s, keys[0], want, found[:0]); err != nil {
			return nil, err
		}
		for _, k := range keys[1:] {
			if len(found) == 0 {
				break
			}
			if other, err = lk.segmentSeqs(ctx, read, s, k, seqRange{after: after}, other[:0]); err != nil {
				return nil, err
			}
			found = intersect(found, other)
		}
		for _, seq := range found {
			if out = append(out, seq); len(out) == q.Limit {
				return out, nil
			}
		}
	}
	return out, nil
}

// segmentSeqs appends to dst the seqs s holds for key that r selects,
// reading its chunks with read.
func (lk *lookups) segmentSeqs(ctx context.Context, read *sql.Stmt, s *segment, key int64, r seqRange, dst []int64) ([]int64, error) {
	return s.seqs(key, r, dst, func(n int) ([]byte, error) {
		var chunk []byte
		if err := read.QueryRowContext(ctx, chunkID(s.id, n)).Scan(&chunk); err != nil {
			return nil, fmt.Errorf("index: chunk %d of segment %d: %w", n, s.id, err)
		}
		return chunk, nil
	})
}

// intersect keeps the seqs of a that b holds too; both are ascending.
func intersect(a, b []int64) []int64 {
	out := a[:0]
	for _, s := range a {
		if _, ok := slices.BinarySearch(b, s); ok {
			out = append(out, s)
		}
	}
	return out
}

// segments returns the index's segments as of tx, in seq order. It reads
// their list again only when gen moved, and the filter and chunk keys of
// a segment only the first time it meets it.
func (lk *lookups) segments(ctx context.Context, tx *sql.Tx) ([]*segment, error) {
	var gen int64
	if err := tx.StmtContext(ctx, lk.getGen).QueryRowContext(ctx).Scan(&gen); err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	lk.listed.Lock()
	known, knownGen := lk.listed.segs, lk.listed.gen
	lk.listed.Unlock()
	if known != nil && knownGen == gen {
		return known, nil
	}
	byID := make(map[int64]*segment, len(known))
	for _, s := range known {
		byID[s.id] = s
	}
	segs, err := lk.listSegmentsIn(ctx, tx, byID)
	if err != nil {
		return nil, err
	}
	lk.listed.Lock()
	if gen >= lk.listed.gen {
		lk.listed.gen, lk.listed.segs = gen, segs
	}
	lk.listed.Unlock()
	return segs, nil
}

// listSegmentsIn reads the list of segments in tx, taking from known
// those it holds already.
func (lk *lookups) listSegmentsIn(ctx context.Context, tx *sql.Tx, known map[int64]*segment) ([]*segment, error) {
	rows, err := lk.listSegmentRows(ctx, tx)
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	// segs is never nil once read, even when empty: nil means unread.
	segs := make([]*segment, len(rows))
	read := tx.StmtContext(ctx, lk.readSegment)
	for i := range rows {
		if k := known[rows[i].id]; k != nil {
			segs[i] = k
			continue
		}
		s := &rows[i]
		segs[i] = s
		var filter, firsts []byte
		if err := read.QueryRowContext(ctx, s.id).Scan(&filter, &firsts); err != nil {
			return nil, fmt.Errorf("index: read segment %d: %w", s.id, err)
		}
		if s.filter, err = decodeBloom(filter); err != nil {
			return nil, fmt.Errorf("segment %d: %w", s.id, err)
		}
		if s.firsts, err = decodeFirsts(firsts); err != nil {
			return nil, fmt.Errorf("segment %d: %w", s.id, err)
		}
	}
	return segs, nil
}

// queryKeys returns the keys of q's filters, the most selective first: its
// refs, then its trace. A kind has few values, each with long lists of
// seqs, so it is a key only when q has no other filter.
func queryKeys(q custody.Query) []int64 {
	var keys []int64
	for _, k := range slices.Sorted(maps.Keys(q.Refs)) {
		keys = append(keys, postingKey(fieldRef+k, q.Refs[k]))
	}
	if q.Trace != "" {
		keys = append(keys, postingKey(fieldTrace, q.Trace))
	}
	if len(keys) == 0 {
		keys = append(keys, postingKey(fieldKind, q.Kind))
	}
	return keys
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
	lk.stopMerges()
	var errs []error
	if lk.addChunks != nil {
		errs = append(errs, lk.addChunks.close())
	}
	for _, st := range []*sql.Stmt{lk.getUpto, lk.setUpto, lk.bumpGen, lk.addSegment, lk.segmentsIn, lk.dropSegment,
		lk.dropChunks, lk.getGen, lk.listSegments, lk.readSegment, lk.readChunk, lk.readChunks} {
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
