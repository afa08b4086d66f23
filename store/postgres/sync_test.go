package postgres

import (
	"context"
	"testing"

	"github.com/custody-dev/custody/store/postgres/pgtest"
)

// TestBarrierFlushes: once the barrier returns, the log is flushed past
// a transaction committed asynchronously before it, as a group's is. The
// server is the test's own, so that no other client's commit flushes the
// log for it.
func TestBarrierFlushes(t *testing.T) {
	cluster := pgtest.NewCluster(t)
	db := open(t, cluster.URL, Options{})
	ctx := context.Background()
	if _, err := db.pool.Exec(ctx, `CREATE TABLE async_rows (n int)`); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		var committed, flushed string
		_, err := db.pool.Exec(ctx, `BEGIN; SET LOCAL synchronous_commit = off; INSERT INTO async_rows VALUES (1); COMMIT`)
		if err == nil {
			err = db.pool.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&committed)
		}
		if err == nil {
			err = db.barrier()
		}
		if err == nil {
			err = db.pool.QueryRow(ctx, `SELECT pg_current_wal_flush_lsn()::text`).Scan(&flushed)
		}
		if err != nil {
			t.Fatal(err)
		}
		if !lsnAtLeast(t, db, flushed, committed) {
			t.Fatalf("commit %d: the log is flushed to %s after the barrier, short of the commit at %s", i, flushed, committed)
		}
	}
}

// lsnAtLeast says whether log position a is at or after b.
func lsnAtLeast(t *testing.T, db *DB, a, b string) bool {
	t.Helper()
	var ok bool
	if err := db.pool.QueryRow(context.Background(), `SELECT $1::pg_lsn >= $2::pg_lsn`, a, b).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}
