package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
)

// Append seals e onto the shared chain and returns the sealed entry once
// it is durable: Commit without changes.
func (db *DB) Append(ctx context.Context, e custody.Entry) (custody.Entry, error) {
	return db.Commit(ctx, e)
}

// Commit seals e onto the chain and applies changes to the approvals and
// state of the same database in the same transaction, inside this
// instance's group commit: the entry and its changes are written together
// or not at all. A change whose condition fails refuses this commit alone
// (its Refusal, or ECONFLICT, EDENIED or ENOTFOUND) and the group goes on
// without it; a malformed change or entry is EINVALID; a storage failure
// EUNAVAILABLE, and nothing of the group is written.
//
// A call.started entry is committed naming this instance in the ref
// RefInstance (see lease.go), in place of any it had.
//
// Once e is queued Commit waits for the outcome even if ctx ends, so that
// an error means the entry is not on the ledger.
func (db *DB) Commit(ctx context.Context, e custody.Entry, changes ...custody.Change) (custody.Entry, error) {
	changes, err := custody.CheckChanges(changes)
	if err != nil {
		return custody.Entry{}, err
	}
	if e.Kind == "" {
		return custody.Entry{}, custody.Errorf(custody.EINVALID, "entry: kind is empty")
	}
	if e.At == "" {
		e.At = custody.FormatTime(db.opts.Now())
	}
	e = db.stamp(e)
	r := &request{what: "append evidence", entry: e, changes: changes, done: make(chan struct{}, 1)}
	if err := r.z.Prepare(&r.prep, &r.entry); err != nil {
		return custody.Entry{}, &custody.Error{Kind: custody.EINVALID, Message: "entry: " + err.Error(), Err: err}
	}
	resp, err := db.do(ctx, r)
	if err != nil {
		return custody.Entry{}, err
	}
	return resp.entry, nil
}

// do hands r to the writer and waits for its outcome.
func (db *DB) do(ctx context.Context, r *request) (response, error) {
	if err := ctx.Err(); err != nil {
		return response{}, unavailable(r.what, err)
	}
	r.ctx = ctx
	if err := db.enqueue(ctx, r); err != nil {
		return response{}, err
	}
	<-r.done
	return r.resp, r.resp.err
}

func (db *DB) enqueue(ctx context.Context, r *request) error {
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.closed {
		return errClosed(r.what)
	}
	select {
	case db.reqs <- r:
		return nil
	case <-ctx.Done():
		return unavailable(r.what, ctx.Err())
	}
}

// Head returns the receipt of the ledger's last entry, as committed by
// any instance; Seq 0 and an empty hash when the ledger is empty.
func (db *DB) Head(ctx context.Context) (custody.Receipt, error) {
	var r custody.Receipt
	if err := db.pool.QueryRow(ctx, `SELECT seq, hash FROM ledger_head WHERE id = 1`).Scan(&r.Seq, &r.Hash); err != nil {
		return r, unavailable("read the ledger's head", err)
	}
	db.publish(r)
	return r, nil
}

// Entries returns the entries matching q in seq order, at most q.Limit of
// them (DefaultLimit when 0). It serves people reading the ledger; the
// gateway's policy reads keyed state.
func (db *DB) Entries(ctx context.Context, q custody.Query) ([]custody.Entry, error) {
	if q.Limit < 0 {
		return nil, custody.Errorf(custody.EINVALID, "query: limit %d is negative", q.Limit)
	}
	if q.Limit == 0 {
		q.Limit = DefaultLimit
	}
	sel := `SELECT ` + entryColumns + ` FROM entries WHERE seq > $1`
	args := []any{max(q.After, 0)}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if q.Trace != "" {
		sel += ` AND trace = ` + arg(q.Trace)
	}
	if q.Kind != "" {
		sel += ` AND kind = ` + arg(q.Kind)
	}
	for _, k := range slices.Sorted(maps.Keys(q.Refs)) {
		sel += ` AND (refs::jsonb ->> ` + arg(k) + `) = ` + arg(q.Refs[k])
	}
	sel += ` ORDER BY seq LIMIT ` + arg(q.Limit)
	rows, err := db.pool.Query(ctx, sel, args...)
	if err != nil {
		return nil, unavailable("read entries", err)
	}
	out, err := pgx.CollectRows(rows, scanEntry)
	if err != nil {
		return nil, walkError(err)
	}
	if out == nil {
		out = []custody.Entry{}
	}
	return out, nil
}

const entryColumns = `seq, at, kind, trace, actor, refs, body, body_sha256, prev, hash`

// scanEntry reads one row of entryColumns. A refs column that is not a
// JSON object of strings is reported, not papered over: it means the row
// was changed outside custody.
func scanEntry(row pgx.CollectableRow) (custody.Entry, error) {
	var e custody.Entry
	var refs string
	if err := row.Scan(&e.Seq, &e.At, &e.Kind, &e.Trace, &e.Actor, &refs, &e.Body, &e.BodySHA256, &e.Prev, &e.Hash); err != nil {
		return e, err
	}
	if err := json.Unmarshal([]byte(refs), &e.Refs); err != nil || e.Refs == nil {
		return e, &ledger.VerifyError{Seq: e.Seq, Reason: fmt.Sprintf("stored refs are not a JSON object of strings: %q", refs)}
	}
	return e, nil
}

// refsColumn returns the stored form of refs: their JSON encoding, "{}"
// for none, which most entries have, without going through the encoder.
func refsColumn(refs map[string]string) string {
	if len(refs) == 0 {
		return "{}"
	}
	b, _ := json.Marshal(refs) // a map of strings always encodes
	return string(b)
}
