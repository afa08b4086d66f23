package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/store/internal/schema"
)

// migrationFiles holds the schema, one numbered file per version.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one versioned schema change.
type migration = schema.Migration

// loadMigrations reads the numbered migrations of fsys (package schema).
func loadMigrations(fsys fs.FS) ([]migration, error) { return schema.Load(fsys) }

// migrate applies the migrations the database has not seen, in order and
// in one transaction, and records each in schema_migrations. Instances
// starting together take turns on a transaction-scoped advisory lock named
// after the schema, so that one migrates and the others find it done. A
// database written by a newer custody is refused: this version cannot know
// what its schema means.
func migrate(ctx context.Context, pool *pgxpool.Pool, ms []migration, now time.Time) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('custody.migrate.' || current_schema()))`); err != nil {
			return fmt.Errorf("migrate: lock: %w", err)
		}
		const create = `CREATE TABLE IF NOT EXISTS schema_migrations (
			version integer PRIMARY KEY, name text NOT NULL, applied_at text NOT NULL)`
		if _, err := tx.Exec(ctx, create); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		var current int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
			return fmt.Errorf("migrate: read schema version: %w", err)
		}
		if current > len(ms) {
			return custody.Errorf(custody.EUNAVAILABLE,
				"the database has schema version %d but this custody knows only up to %d: run a newer custody",
				current, len(ms))
		}
		for _, m := range ms[current:] {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("migration %s: %w", m.Name, err)
			}
			const record = `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`
			if _, err := tx.Exec(ctx, record, m.Version, m.Name, custody.FormatTime(now)); err != nil {
				return fmt.Errorf("record migration %s: %w", m.Name, err)
			}
		}
		return nil
	})
}

// schemaVersion returns the schema version of the database, 0 when
// custody never migrated it.
func schemaVersion(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists); err != nil || !exists {
		return 0, err
	}
	var v int
	err := pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}
