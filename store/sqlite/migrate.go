package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"time"

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

// migrate applies the migrations the database has not seen, in order and in
// one transaction, and records each in schema_migrations. A database written
// by a newer version of custody is refused: this version cannot know what its
// schema means.
func migrate(ctx context.Context, db *sql.DB, ms []migration, now time.Time) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback()
	const create = `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`
	if _, err := tx.ExecContext(ctx, create); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var current int
	row := tx.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`)
	if err := row.Scan(&current); err != nil {
		return fmt.Errorf("migrate: read schema version: %w", err)
	}
	if current > len(ms) {
		return custody.Errorf(custody.EUNAVAILABLE,
			"the database has schema version %d but this custody knows only up to %d: run a newer custody",
			current, len(ms))
	}
	for _, m := range ms[current:] {
		if err := apply(ctx, tx, m, now); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate: commit: %w", err)
	}
	return nil
}

func apply(ctx context.Context, tx *sql.Tx, m migration, now time.Time) error {
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return fmt.Errorf("migration %s: %w", m.Name, err)
	}
	const record = `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`
	if _, err := tx.ExecContext(ctx, record, m.Version, m.Name, custody.FormatTime(now)); err != nil {
		return fmt.Errorf("record migration %s: %w", m.Name, err)
	}
	return nil
}
