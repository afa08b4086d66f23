package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/custody-dev/custody"
)

// State returns the document stored under ns and key; ENOTFOUND if absent.
func (db *DB) State(ctx context.Context, ns, key string) (json.RawMessage, error) {
	var doc []byte
	err := db.pool.QueryRow(ctx, `SELECT doc FROM state WHERE ns = $1 AND key = $2`, ns, key).Scan(&doc)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, custody.Errorf(custody.ENOTFOUND, "state %s/%s not found", ns, key)
	}
	if err != nil {
		return nil, unavailable("read state", err)
	}
	return doc, nil
}

// PutState stores doc under ns and key, replacing any previous document;
// EINVALID if doc is not valid JSON. It is its own transaction: state the
// ledger justifies goes through Commit instead.
func (db *DB) PutState(ctx context.Context, ns, key string, doc json.RawMessage) error {
	if !json.Valid(doc) {
		return custody.Errorf(custody.EINVALID, "state %s/%s: the document is not valid JSON", ns, key)
	}
	return unavailable("put state", putState(ns, key, bytes.Clone(doc)).run(ctx, db.pool))
}

// States returns the documents of namespace ns by key.
func (db *DB) States(ctx context.Context, ns string) (map[string]json.RawMessage, error) {
	rows, err := db.pool.Query(ctx, `SELECT key, doc FROM state WHERE ns = $1`, ns)
	if err != nil {
		return nil, unavailable("list state", err)
	}
	defer rows.Close()
	out := map[string]json.RawMessage{}
	for rows.Next() {
		var key string
		var doc []byte
		if err := rows.Scan(&key, &doc); err != nil {
			return nil, unavailable("list state", err)
		}
		out[key] = doc
	}
	if err := rows.Err(); err != nil {
		return nil, unavailable("list state", err)
	}
	return out, nil
}

// IncrState adds delta to the integer counter under ns and key (absent
// counts as 0) and returns its new value, in one statement. EINVALID if
// the document is not an integer or the sum overflows.
func (db *DB) IncrState(ctx context.Context, ns, key string, delta int64) (int64, error) {
	var n int64
	if err := incr(ns, key, delta, 0, &n).run(ctx, db.pool); err != nil {
		return 0, unavailable("increment state", err)
	}
	return n, nil
}

// putState is the statement storing doc under ns and key.
func putState(ns, key string, doc []byte) statement {
	const q = `INSERT INTO state (ns, key, doc) VALUES ($1, $2, $3)
		ON CONFLICT (ns, key) DO UPDATE SET doc = excluded.doc RETURNING 1`
	return statement{sql: q, args: []any{ns, key, doc}, read: func(row pgx.Row) error {
		var one int
		return dataError("write state "+ns+"/"+key, row.Scan(&one))
	}}
}

// incrSQL adds $3 to the counter under $1/$2 in one conditional upsert:
// with $4 > 0 a sum above $4 writes nothing and returns no row. The
// counter is the document's text as an integer; one that is not an
// integer, or a sum out of range, is a data error.
const incrSQL = `INSERT INTO state AS s (ns, key, doc)
	SELECT $1, $2, convert_to($3::bigint::text, 'UTF8') WHERE $4::bigint = 0 OR $3::bigint <= $4::bigint
	ON CONFLICT (ns, key) DO UPDATE
	SET doc = convert_to((convert_from(s.doc, 'UTF8')::bigint + $3::bigint)::text, 'UTF8')
	WHERE $4::bigint = 0 OR convert_from(s.doc, 'UTF8')::bigint + $3::bigint <= $4::bigint
	RETURNING convert_from(s.doc, 'UTF8')::bigint`

// incr is the statement adding delta to the counter under ns and key and
// reading the sum into n; with limit > 0 a sum above limit is EDENIED and
// nothing is written.
func incr(ns, key string, delta, limit int64, n *int64) statement {
	return statement{sql: incrSQL, args: []any{ns, key, delta, limit}, read: func(row pgx.Row) error {
		err := row.Scan(n)
		if errors.Is(err, pgx.ErrNoRows) {
			return custody.Errorf(custody.EDENIED, "state %s/%s: adding %d would pass the limit %d", ns, key, delta, limit)
		}
		return dataError("state "+ns+"/"+key, err)
	}}
}
