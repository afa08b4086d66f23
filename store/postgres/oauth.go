package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/custody-dev/custody"
)

// The upstreams' sealed access tokens (upstream.TokenStore): bytes this
// store keeps as they are, in their own table, never on the ledger.

// UpstreamToken returns the sealed token kept for the upstream name;
// ENOTFOUND when there is none.
func (db *DB) UpstreamToken(ctx context.Context, name string) ([]byte, error) {
	var sealed []byte
	err := db.pool.QueryRow(ctx, `SELECT sealed FROM upstream_tokens WHERE upstream = $1`, name).Scan(&sealed)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, custody.Errorf(custody.ENOTFOUND, "no token kept for upstream %q", name)
	}
	if err != nil {
		return nil, unavailable("read an upstream token", err)
	}
	return sealed, nil
}

// PutUpstreamToken keeps sealed as the upstream's token, replacing any.
// It is its own transaction: the last instance to obtain a token wins.
func (db *DB) PutUpstreamToken(ctx context.Context, name string, sealed []byte) error {
	const q = `INSERT INTO upstream_tokens (upstream, sealed, updated_at) VALUES ($1, $2, $3)
		ON CONFLICT (upstream) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at`
	if _, err := db.pool.Exec(ctx, q, name, sealed, db.opts.Now()); err != nil {
		return unavailable("keep an upstream token", err)
	}
	return nil
}
