package postgres

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
	"github.com/custody-dev/custody/store/postgres/pgtest"
)

var migrateTime = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func migrations(t *testing.T) []migration {
	t.Helper()
	ms, err := loadMigrations(migrationFiles)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) < 2 {
		t.Fatalf("%d migrations: the tests below want at least 2", len(ms))
	}
	return ms
}

func version(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	v, err := schemaVersion(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestMigrateRecordsEveryVersion: a new schema gets every migration, each
// recorded once by version and name, and migrating again does nothing.
func TestMigrateRecordsEveryVersion(t *testing.T) {
	url := pgtest.URL(t)
	pool := rawPool(t, url)
	ms := migrations(t)
	if v := version(t, pool); v != 0 {
		t.Fatalf("schemaVersion of an empty schema = %d, want 0", v)
	}
	for range 2 {
		if err := migrate(context.Background(), pool, ms, migrateTime); err != nil {
			t.Fatal(err)
		}
	}
	if v := version(t, pool); v != len(ms) {
		t.Fatalf("schemaVersion = %d, want %d", v, len(ms))
	}
	rows, err := pool.Query(context.Background(), `SELECT version, name, applied_at FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	i := 0
	for rows.Next() {
		var v int
		var name, at string
		if err := rows.Scan(&v, &name, &at); err != nil {
			t.Fatal(err)
		}
		if i >= len(ms) || v != ms[i].Version || name != ms[i].Name || at != custody.FormatTime(migrateTime) {
			t.Fatalf("schema_migrations row %d = %d %s %s", i, v, name, at)
		}
		i++
	}
	if i != len(ms) {
		t.Fatalf("schema_migrations holds %d rows, want %d", i, len(ms))
	}
}

// TestMigrateUpgrades opens a schema left at the first version by an
// older custody: Open brings it to the last and gives the ledger an id.
func TestMigrateUpgrades(t *testing.T) {
	url := pgtest.URL(t)
	pool := rawPool(t, url)
	ms := migrations(t)
	if err := migrate(context.Background(), pool, ms[:1], migrateTime); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), url, Options{ReadOnly: true}); custody.ErrorKind(err) != custody.EUNAVAILABLE ||
		!strings.Contains(err.Error(), "schema version 1") {
		t.Fatalf("read-only Open of an older schema: %v, want EUNAVAILABLE naming version 1", err)
	}
	db := open(t, url, Options{})
	if v := version(t, pool); v != len(ms) {
		t.Fatalf("schemaVersion after Open = %d, want %d", v, len(ms))
	}
	if err := ledger.CheckLedgerID(db.LedgerID()); err != nil {
		t.Fatalf("the upgraded ledger's id %q: %v", db.LedgerID(), err)
	}
	appendN(t, db, 2, "t1")
	if cp, err := db.Checkpoint(context.Background()); err != nil || cp.Ledger != db.LedgerID() {
		t.Fatalf("Checkpoint after the upgrade = %+v, %v; want it to name the ledger", cp, err)
	}
}

// TestMigrateFailureWritesNothing: a migration that fails rolls back the
// ones before it in the same run, and the table of versions with them.
func TestMigrateFailureWritesNothing(t *testing.T) {
	url := pgtest.URL(t)
	pool := rawPool(t, url)
	ms, err := loadMigrations(fstest.MapFS{
		"migrations/0001_good.sql": {Data: []byte(`CREATE TABLE good (n int)`)},
		"migrations/0002_bad.sql":  {Data: []byte(`CREATE TABLE good (n int)`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	err = migrate(context.Background(), pool, ms, migrateTime)
	if err == nil || !strings.Contains(err.Error(), "0002_bad.sql") {
		t.Fatalf("migrate with a failing migration: %v, want it named", err)
	}
	if n := pgtest.QueryInt(t, url, `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()`); n != 0 {
		t.Fatalf("a failed migration left %d tables", n)
	}
}

// TestMigrateConcurrently: instances migrating one new schema at once
// take turns; every version is applied once.
func TestMigrateConcurrently(t *testing.T) {
	url := pgtest.URL(t)
	ms := migrations(t)
	const n = 8
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		pool := rawPool(t, url)
		wg.Go(func() {
			<-start
			errs[i] = migrate(context.Background(), pool, ms, migrateTime)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("migrate %d: %v", i, err)
		}
	}
	if got := pgtest.QueryInt(t, url, `SELECT count(*) FROM schema_migrations`); got != int64(len(ms)) {
		t.Fatalf("schema_migrations holds %d rows, want %d", got, len(ms))
	}
	if got := pgtest.QueryInt(t, url, `SELECT count(*) FROM ledger_head`); got != 1 {
		t.Fatalf("ledger_head holds %d rows, want 1", got)
	}
}

// TestNewerSchemaRefusedReadOnly: a read-only Open of a schema a newer
// custody wrote is refused as well, and names both versions.
func TestNewerSchemaRefusedReadOnly(t *testing.T) {
	url := pgtest.URL(t)
	open(t, url, Options{}).Close()
	pgtest.Exec(t, url, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, '0099_future.sql', 'now')`)
	_, err := Open(context.Background(), url, Options{ReadOnly: true})
	wantKind(t, "read-only Open of a newer schema", err, custody.EUNAVAILABLE)
	if !strings.Contains(err.Error(), "99") {
		t.Fatalf("the refusal does not name the version: %v", err)
	}
	_, err = Open(context.Background(), url, Options{KeyFile: filepath.Join(t.TempDir(), "signing.key")})
	if err == nil || !strings.Contains(err.Error(), "run a newer custody") {
		t.Fatalf("Open of a newer schema: %v, want it to say what to run", err)
	}
}
