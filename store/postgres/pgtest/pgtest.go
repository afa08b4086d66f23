// Package pgtest gives each test a PostgreSQL schema of its own in the
// database named by $CUSTODY_TEST_POSTGRES_URL, so that tests run in
// parallel and leave nothing behind. Tests skip where it is unset.
package pgtest

import (
	"context"
	"crypto/rand"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the environment variable holding the test database's URL.
const EnvURL = "CUSTODY_TEST_POSTGRES_URL"

// URL creates a new, empty schema for t and returns the database URL with
// that schema as its search_path; the schema is dropped when t ends. It
// skips t when $CUSTODY_TEST_POSTGRES_URL is unset.
func URL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvURL)
	if base == "" {
		t.Skip(EnvURL + " is unset: no PostgreSQL to test against")
	}
	schema := "custody_test_" + strings.ToLower(rand.Text()[:16])
	execSQL(t, base, `CREATE SCHEMA `+schema)
	t.Cleanup(func() { execSQL(t, base, `DROP SCHEMA `+schema+` CASCADE`) })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", EnvURL, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Exec runs sql on the database at dsn, failing t on error.
func Exec(t testing.TB, dsn, sql string, args ...any) {
	t.Helper()
	execSQL(t, dsn, sql, args...)
}

func execSQL(t testing.TB, dsn, sql string, args ...any) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to %s: %v", EnvURL, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// QueryInt runs sql, which returns one integer, on the database at dsn,
// failing t on error.
func QueryInt(t testing.TB, dsn, sql string, args ...any) int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to %s: %v", EnvURL, err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// Require skips t, once for all its subtests, when
// $CUSTODY_TEST_POSTGRES_URL is unset.
func Require(t testing.TB) {
	t.Helper()
	if os.Getenv(EnvURL) == "" {
		t.Skip(EnvURL + " is unset: no PostgreSQL to test against")
	}
}
