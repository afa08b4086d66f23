package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/custody-dev/custody"
)

// State returns the document stored under ns and key; ENOTFOUND if absent.
func (db *DB) State(ctx context.Context, ns, key string) (json.RawMessage, error) {
	return getState(ctx, db.rdb, ns, key)
}

// PutState stores doc under ns and key, replacing any previous document;
// EINVALID if doc is not valid JSON.
func (db *DB) PutState(ctx context.Context, ns, key string, doc json.RawMessage) error {
	if !json.Valid(doc) {
		return custody.Errorf(custody.EINVALID, "state %s/%s: the document is not valid JSON", ns, key)
	}
	doc = bytes.Clone(doc)
	_, err := db.do(ctx, &request{what: "put state", op: func(ctx context.Context, tx *sql.Tx) error {
		return putState(ctx, tx, ns, key, doc)
	}})
	return err
}

// States returns the documents of namespace ns by key.
func (db *DB) States(ctx context.Context, ns string) (map[string]json.RawMessage, error) {
	rows, err := db.rdb.QueryContext(ctx, `SELECT key, doc FROM state WHERE ns = ?`, ns)
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
// counts as 0) and returns its new value. EINVALID if the document is not
// an integer or the sum overflows.
func (db *DB) IncrState(ctx context.Context, ns, key string, delta int64) (int64, error) {
	var n int64
	_, err := db.do(ctx, &request{what: "increment state", op: func(ctx context.Context, tx *sql.Tx) error {
		var err error
		n, err = incr(ctx, tx, ns, key, delta, 0)
		return err
	}})
	return n, err
}

func counter(ctx context.Context, tx sqlTx, ns, key string) (int64, error) {
	doc, err := getState(ctx, tx, ns, key)
	if custody.ErrorKind(err) == custody.ENOTFOUND {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(doc)), 10, 64)
	if err != nil {
		return 0, custody.Errorf(custody.EINVALID, "state %s/%s is not an integer counter", ns, key)
	}
	return n, nil
}

func getState(ctx context.Context, q querier, ns, key string) (json.RawMessage, error) {
	var doc []byte
	err := q.QueryRowContext(ctx, selectState, ns, key).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, custody.Errorf(custody.ENOTFOUND, "state %s/%s not found", ns, key)
	}
	if err != nil {
		return nil, unavailable("read state", err)
	}
	return doc, nil
}

// The statements that read and write one state document.
const (
	selectState = `SELECT doc FROM state WHERE ns = ? AND key = ?`
	upsertState = `INSERT INTO state (ns, key, doc) VALUES (?, ?, ?)
		ON CONFLICT (ns, key) DO UPDATE SET doc = excluded.doc`
)

func putState(ctx context.Context, tx sqlTx, ns, key string, doc []byte) error {
	if _, err := tx.ExecContext(ctx, upsertState, ns, key, doc); err != nil {
		return unavailable("write state", fmt.Errorf("state %s/%s: %w", ns, key, err))
	}
	return nil
}

// Namespaces lists the namespaces that hold state documents, sorted: what
// a copy of the whole store reads.
func (db *DB) Namespaces(ctx context.Context) ([]string, error) {
	rows, err := db.rdb.QueryContext(ctx, `SELECT DISTINCT ns FROM state ORDER BY ns`)
	if err != nil {
		return nil, unavailable("list state", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var ns string
		if err := rows.Scan(&ns); err != nil {
			return nil, unavailable("list state", err)
		}
		out = append(out, ns)
	}
	if err := rows.Err(); err != nil {
		return nil, unavailable("list state", err)
	}
	return out, nil
}
