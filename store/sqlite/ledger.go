package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
)

// Append seals e onto the chain (setting Seq, Prev, BodySHA256, Hash, and At
// when empty) and returns the sealed entry. It returns only once the entry
// and the chain head are durable. A body that canonical JSON refuses
// (invalid JSON or UTF-8, duplicate keys, integers beyond ±2^53), a field
// that is not valid UTF-8 or an entry without a kind is refused with
// EINVALID and nothing is written; a storage failure is EUNAVAILABLE and
// nothing is written either.
//
// Once e is queued Append waits for the outcome even if ctx ends, so that
// an error means the entry is not on the ledger. The one exception is an
// fsync of the log that fails: the disk's state is then unknown, the
// entries of the batches waiting for it are reported unavailable though
// some may survive, and the store refuses every write until it is opened
// again.
func (db *DB) Append(ctx context.Context, e custody.Entry) (custody.Entry, error) {
	return db.Commit(ctx, e)
}

// Commit seals e onto the chain and applies changes to the approvals and
// state of the same database in the same transaction, inside the group
// commit: the entry and its changes are written together or not at all.
// A change whose condition fails refuses this commit alone (its Refusal,
// or ECONFLICT or EDENIED) and the batch goes on without it; a malformed
// change is EINVALID. Otherwise Commit behaves as Append.
func (db *DB) Commit(ctx context.Context, e custody.Entry, changes ...custody.Change) (custody.Entry, error) {
	changes, err := custody.CheckChanges(changes)
	if err != nil {
		return custody.Entry{}, err
	}
	if e.At == "" {
		e.At = custody.FormatTime(db.opts.Now())
	}
	a, _ := db.appends.Get().(*appendReq)
	if a == nil {
		a = &appendReq{done: make(chan struct{}, 1)}
	}
	defer db.appends.Put(a)
	defer a.reset() // the writer is done with a once do returns
	a.e = e
	if err := a.prepare(); err != nil {
		return custody.Entry{}, err
	}
	a.req = request{what: "append evidence", entry: &a.e, prepared: &a.p, changes: changes, done: a.done}
	resp, err := db.do(ctx, &a.req)
	if err != nil {
		return custody.Entry{}, err
	}
	db.feed.changed(changes)
	return resp.entry, nil
}

// appendReq is an append on its way to the writer: the entry, prepared
// for sealing, and the request carrying it. The DB pools them, so that an
// append stops allocating its request, and the canonicalizer's buffers,
// under load.
type appendReq struct {
	e    custody.Entry
	z    ledger.Canonicalizer
	p    ledger.Prepared
	req  request
	done chan struct{} // req's, kept from one append to the next
}

// reset lets go of the last append's entry, keeping the buffers.
func (a *appendReq) reset() {
	a.e, a.req = custody.Entry{}, request{}
}

// prepare refuses, in the caller's goroutine, what the writer would
// refuse, and readies the entry for sealing: the canonical form of the
// entry is the costly part of sealing and is built here, in parallel,
// leaving the single writer only the chain's SHA-256 to compute.
func (a *appendReq) prepare() error {
	if a.e.Kind == "" {
		return custody.Errorf(custody.EINVALID, "entry: kind is empty")
	}
	if err := a.z.Prepare(&a.p, &a.e); err != nil {
		return &custody.Error{Kind: custody.EINVALID, Message: "entry: " + err.Error(), Err: err}
	}
	return nil
}

// do hands r to the writer and waits for its outcome.
func (db *DB) do(ctx context.Context, r *request) (response, error) {
	if err := ctx.Err(); err != nil {
		return response{}, unavailable(r.what, err)
	}
	r.ctx = ctx
	if r.done == nil {
		r.done = make(chan struct{}, 1)
	}
	if err := db.enqueue(ctx, r); err != nil {
		return response{}, err
	}
	<-r.done
	if r.resp.panicked != nil {
		panic(r.resp.panicked)
	}
	return r.resp, r.resp.err
}

func (db *DB) enqueue(ctx context.Context, r *request) error {
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.closed {
		return errClosed(r.what)
	}
	if db.opts.ReadOnly {
		return custody.Errorf(custody.EUNAVAILABLE, "%s: the store is open read-only", r.what)
	}
	select {
	case db.reqs <- r:
		return nil
	case <-ctx.Done():
		return unavailable(r.what, ctx.Err())
	}
}

// Head returns the receipt of the ledger's last entry as this process
// knows it: its own appends count once they are durable; the head found
// on Open, or when another process appended, counts as found. Seq 0 and
// an empty hash when the ledger is empty. Once an fsync has failed the
// head on disk is unknown: Head is EUNAVAILABLE until the store is opened
// again, so that a health check sees what every write sees.
func (db *DB) Head(ctx context.Context) (custody.Receipt, error) {
	if err := db.w.sync.err(); err != nil {
		return custody.Receipt{}, unavailable("read the ledger's head", err)
	}
	return *db.head.Load(), nil
}

// Checkpoint signs and stores a checkpoint of the current head now, unless
// the latest checkpoint already covers it, and returns the checkpoint that
// covers the head. ENOTFOUND when the ledger is empty.
func (db *DB) Checkpoint(ctx context.Context) (custody.Checkpoint, error) {
	resp, err := db.do(ctx, &request{what: "write checkpoint", checkpoint: true})
	if err != nil {
		return custody.Checkpoint{}, err
	}
	return resp.cp, nil
}

// LatestCheckpoint returns the checkpoint of the largest size; ENOTFOUND
// when none was written yet.
func (db *DB) LatestCheckpoint(ctx context.Context) (custody.Checkpoint, error) {
	return latestCheckpoint(ctx, db.rdb)
}

// Checkpoints returns every signed checkpoint in size order.
func (db *DB) Checkpoints(ctx context.Context) ([]custody.Checkpoint, error) {
	cps, err := readCheckpoints(ctx, db.rdb)
	if err != nil {
		return nil, unavailable("read checkpoints", err)
	}
	return cps, nil
}

// querier is what both a pool and a transaction offer.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

const selectHead = `SELECT seq, hash FROM entries ORDER BY seq DESC LIMIT 1`

func readHead(ctx context.Context, q querier) (custody.Receipt, error) {
	return scanHead(q.QueryRowContext(ctx, selectHead))
}

func scanHead(row *sql.Row) (custody.Receipt, error) {
	var r custody.Receipt
	err := row.Scan(&r.Seq, (*digest)(&r.Hash))
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("read head: %w", err)
	}
	return r, nil
}

func latestCheckpoint(ctx context.Context, q querier) (custody.Checkpoint, error) {
	var cp custody.Checkpoint
	const sel = `SELECT ledger, size, head, at, sig FROM checkpoints ORDER BY size DESC LIMIT 1`
	err := q.QueryRowContext(ctx, sel).Scan(&cp.Ledger, &cp.Size, &cp.Head, &cp.At, &cp.Sig)
	if errors.Is(err, sql.ErrNoRows) {
		return cp, custody.Errorf(custody.ENOTFOUND, "no checkpoint yet")
	}
	if err != nil {
		return cp, unavailable("read checkpoint", err)
	}
	return cp, nil
}

func readCheckpoints(ctx context.Context, q querier) ([]custody.Checkpoint, error) {
	rows, err := q.QueryContext(ctx, `SELECT ledger, size, head, at, sig FROM checkpoints ORDER BY size`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cps []custody.Checkpoint
	for rows.Next() {
		var cp custody.Checkpoint
		if err := rows.Scan(&cp.Ledger, &cp.Size, &cp.Head, &cp.At, &cp.Sig); err != nil {
			return nil, err
		}
		cps = append(cps, cp)
	}
	return cps, rows.Err()
}

// Entries returns the entries matching q in seq order, at most q.Limit of
// them (DefaultLimit when 0). It serves people reading the ledger: a
// filter by trace, kind or refs scans the entries after q.After, which
// costs in proportion to the ledger. The gateway's policy reads keyed
// state instead (see Commit).
func (db *DB) Entries(ctx context.Context, q custody.Query) ([]custody.Entry, error) {
	if q.Limit < 0 {
		return nil, custody.Errorf(custody.EINVALID, "query: limit %d is negative", q.Limit)
	}
	if q.Limit == 0 {
		q.Limit = DefaultLimit
	}
	sel := `SELECT ` + entryColumns + `, ` + prevColumn + ` FROM entries WHERE seq > ?`
	args := []any{max(q.After, 0)}
	if q.Trace != "" {
		sel += ` AND trace = ?`
		args = append(args, q.Trace)
	}
	if q.Kind != "" {
		sel += ` AND kind = ?`
		args = append(args, q.Kind)
	}
	for _, k := range slices.Sorted(maps.Keys(q.Refs)) {
		sel += ` AND json_extract(refs, ?) IS ?`
		args = append(args, refPath(k), q.Refs[k])
	}
	return db.queryEntries(ctx, sel+` ORDER BY seq LIMIT ?`, append(args, q.Limit)...)
}

// refPath is the JSON path of the ref k in the refs column: a quoted
// member name, so that any key is taken as it is.
func refPath(k string) string {
	b, _ := json.Marshal(k)
	return "$." + string(b)
}

func (db *DB) queryEntries(ctx context.Context, query string, args ...any) ([]custody.Entry, error) {
	rows, err := db.rdb.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, unavailable("read entries", err)
	}
	defer rows.Close()
	out := []custody.Entry{}
	for rows.Next() {
		var prev digest
		e, err := scanEntry(rows, &prev)
		if err == nil {
			err = prevOf(&e, prev)
		}
		if err != nil {
			return nil, unavailable("read entries", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, unavailable("read entries", err)
	}
	return out, nil
}

// entryColumns are the stored columns of an entry. Its prev is not among
// them: it is the hash of the entry before (see chain and prevColumn).
const entryColumns = `seq, at, kind, trace, actor, refs, body, body_sha256, hash`

// scanEntry reads one row of entryColumns, and the columns after them into
// more; the caller sets Prev. See entryOf.
func scanEntry(rows *sql.Rows, more ...any) (custody.Entry, error) {
	var v [entryColumnCount]any
	dest := make([]any, 0, len(v)+len(more))
	for i := range v {
		dest = append(dest, &v[i])
	}
	if err := rows.Scan(append(dest, more...)...); err != nil {
		return custody.Entry{}, err
	}
	var dv [entryColumnCount]driver.Value
	for i := range v {
		dv[i] = v[i]
	}
	return entryOf(dv[:])
}

// entryColumnCount is how many columns entryColumns names.
const entryColumnCount = 9

// entryOf makes an entry of the values of one row of entryColumns as the
// driver gives them (a *sql.Rows scanned into *any gives the same): the
// text columns as string or []byte, body as []byte or string, the digests
// as digest reads them. The body is taken, not copied. A refs column that
// is not a JSON object of strings, or a value of another type, is
// reported, not papered over: it means the row was changed outside
// custody.
func entryOf(v []driver.Value) (custody.Entry, error) {
	var e custody.Entry
	seq, ok := v[0].(int64)
	if !ok {
		return e, fmt.Errorf("a seq stored as %T", v[0])
	}
	e.Seq = seq
	bad := func(column string, v any) (custody.Entry, error) {
		what := fmt.Sprintf("a %T", v)
		if v == nil {
			what = "NULL"
		}
		return e, &ledger.VerifyError{Seq: seq, Reason: fmt.Sprintf("stored %s is %s, not what custody writes", column, what)}
	}
	var refs string
	for i, c := range []struct {
		name string
		dst  *string
	}{{"at", &e.At}, {"kind", &e.Kind}, {"trace", &e.Trace}, {"actor", &e.Actor}, {"refs", &refs}} {
		switch x := v[1+i].(type) {
		case string:
			*c.dst = x
		case []byte:
			*c.dst = string(x)
		default:
			return bad(c.name, x)
		}
	}
	switch x := v[6].(type) {
	case []byte:
		e.Body = x
	case string:
		e.Body = []byte(x)
	case nil:
	default:
		return bad("body", x)
	}
	for i, c := range []struct {
		name string
		dst  *string
	}{{"body_sha256", &e.BodySHA256}, {"hash", &e.Hash}} {
		var d digest
		if err := d.Scan(v[7+i]); err != nil {
			return bad(c.name, v[7+i])
		}
		*c.dst = string(d)
	}
	var err error
	if e.Refs, err = parseRefs(refs); err != nil || e.Refs == nil {
		return e, &ledger.VerifyError{Seq: e.Seq, Reason: fmt.Sprintf("stored refs are not a JSON object of strings: %q", refs)}
	}
	return e, nil
}

// insertStmts are the prepared statements of the append path.
type insertStmts struct {
	entries *multiInsert
	head    *sql.Stmt
	args    []any  // reused by every batch
	digests []byte // the batch's digests as bytes, reused likewise
}

func prepareInserts(ctx context.Context, conn *sql.DB) (*insertStmts, error) {
	// OR FAIL rather than the default ABORT: a failed insert fails the
	// whole batch, which is rolled back anyway, so SQLite need not keep a
	// statement journal (a copy of every page a statement touches) to
	// undo just the statement.
	m, err := prepareMultiInsert(ctx, conn, "OR FAIL INTO entries", strings.Split(entryColumns, ", ")...)
	if err != nil {
		return nil, err
	}
	head, err := conn.PrepareContext(ctx, selectHead)
	if err != nil {
		m.close()
		return nil, fmt.Errorf("prepare head: %w", err)
	}
	return &insertStmts{entries: m, head: head}, nil
}

// readHead returns the last entry's receipt as tx sees it.
func (s *insertStmts) readHead(ctx context.Context, tx *sql.Tx) (custody.Receipt, error) {
	return scanHead(tx.StmtContext(ctx, s.head).QueryRowContext(ctx))
}

// insert writes sealed entries.
func (s *insertStmts) insert(ctx context.Context, tx *sql.Tx, entries []*custody.Entry) error {
	args := s.args[:0]
	// Every digest gets its room now, so that the slices args holds
	// into the buffer stay valid while it fills.
	if n := 2 * digestSize * len(entries); cap(s.digests) < n {
		s.digests = make([]byte, 0, n)
	}
	d := s.digests[:0]
	for _, e := range entries {
		refs, err := refsColumn(e.Refs)
		if err != nil {
			return fmt.Errorf("insert entry %d: %w", e.Seq, err)
		}
		at := len(d)
		if d, err = appendDigest(d, "body_sha256", e.BodySHA256); err == nil {
			d, err = appendDigest(d, "hash", e.Hash)
		}
		if err != nil {
			return fmt.Errorf("insert entry %d: %w", e.Seq, err)
		}
		args = append(args, e.Seq, e.At, e.Kind, e.Trace, e.Actor, refs, []byte(e.Body),
			d[at:at+digestSize:at+digestSize], d[at+digestSize:at+2*digestSize:at+2*digestSize])
	}
	err := s.entries.exec(ctx, tx, args)
	clear(args)
	s.args = args[:0]
	if err != nil {
		return fmt.Errorf("insert entries %d-%d: %w", entries[0].Seq, entries[len(entries)-1].Seq, err)
	}
	return nil
}

// refsColumn returns the stored form of refs: their JSON encoding, "{}"
// for none, which most entries have, without going through the encoder.
func refsColumn(refs map[string]string) (string, error) {
	if len(refs) == 0 {
		return "{}", nil
	}
	b, err := json.Marshal(refs)
	return string(b), err
}

func (s *insertStmts) close() error { return errors.Join(s.entries.close(), s.head.Close()) }
