package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"

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
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return fmt.Errorf("migration %s: %w", m.name, err)
	}
	const record = `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`
	if _, err := tx.ExecContext(ctx, record, m.version, m.name, custody.FormatTime(now)); err != nil {
		return fmt.Errorf("record migration %s: %w", m.name, err)
	}
	return nil
}
