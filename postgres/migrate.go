package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/custody-dev/custody"
)

// migrationFiles holds the schema, one numbered file per version.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one versioned schema change.
type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads NNNN_name.sql files from fsys and checks that their
// versions run 1, 2, 3, ... without a gap, so that a version number always
// means the same schema.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	ms := make([]migration, 0, len(names))
	for i, name := range names { // fs.Glob returns names sorted
		base := path.Base(name)
		prefix, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(prefix)
		if !ok || err != nil || v != i+1 {
			return nil, fmt.Errorf("migration %s: want a name starting %04d_", base, i+1)
		}
		text, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", base, err)
		}
		ms = append(ms, migration{version: v, name: base, sql: string(text)})
	}
	return ms, nil
}

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
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
			const record = `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`
			if _, err := tx.Exec(ctx, record, m.version, m.name, custody.FormatTime(now)); err != nil {
				return fmt.Errorf("record migration %s: %w", m.name, err)
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
