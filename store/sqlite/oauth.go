package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"

	"github.com/custody-dev/custody"
)

// The upstreams' sealed access tokens (upstream.TokenStore): bytes this
// store keeps as they are, in their own table, never on the ledger.

// UpstreamToken returns the sealed token kept for the upstream name;
// ENOTFOUND when there is none.
func (db *DB) UpstreamToken(ctx context.Context, name string) ([]byte, error) {
	var sealed []byte
	err := db.rdb.QueryRowContext(ctx, `SELECT sealed FROM upstream_tokens WHERE upstream = ?`, name).Scan(&sealed)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, custody.Errorf(custody.ENOTFOUND, "no token kept for upstream %q", name)
	}
	if err != nil {
		return nil, unavailable("read an upstream token", err)
	}
	return sealed, nil
}

// PutUpstreamToken keeps sealed as the upstream's token, replacing any,
// through the writer: it returns once the write is durable.
func (db *DB) PutUpstreamToken(ctx context.Context, name string, sealed []byte) error {
	sealed = bytes.Clone(sealed)
	at := custody.FormatTime(db.opts.Now())
	_, err := db.do(ctx, &request{what: "keep an upstream token", op: func(ctx context.Context, tx *sql.Tx) error {
		const q = `INSERT INTO upstream_tokens (upstream, sealed, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (upstream) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at`
		if _, err := tx.ExecContext(ctx, q, name, sealed, at); err != nil {
			return unavailable("keep an upstream token", err)
		}
		return nil
	}})
	return err
}
