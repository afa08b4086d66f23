package postgres

import (
	"context"
	"crypto/ed25519"
	"errors"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
	"github.com/custody-dev/custody/store/postgres/pgtest"
)

func readPub(file string) (ed25519.PublicKey, error) {
	text, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return ledger.ParsePublicKey(text)
}

func asVerifyError(err error, ve **ledger.VerifyError) bool { return errors.As(err, ve) }

// rawPool connects to url outside any store, closed when t ends.
func rawPool(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// appendN appends n entries of trace, one at a time, and returns them.
func appendN(t *testing.T, db *DB, n int, trace string) []custody.Entry {
	t.Helper()
	var out []custody.Entry
	for i := range n {
		e, err := db.Append(context.Background(), entry("test.kind", trace))
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		out = append(out, e)
	}
	return out
}

// wantKind fails t unless err is a custody error of kind.
func wantKind(t *testing.T, what string, err error, kind string) {
	t.Helper()
	if got := custody.ErrorKind(err); got != kind || err == nil {
		t.Fatalf("%s: %v (%s), want %s", what, err, got, kind)
	}
}

// wantVerifyError fails t unless err is a *ledger.VerifyError at seq.
func wantVerifyError(t *testing.T, what string, err error, seq int64) {
	t.Helper()
	var ve *ledger.VerifyError
	if !asVerifyError(err, &ve) || ve.Seq != seq {
		t.Fatalf("%s: %v, want a VerifyError at seq %d", what, err, seq)
	}
}

// disableAppendOnly lets the test edit entries behind custody's back.
func disableAppendOnly(t *testing.T, url string) {
	t.Helper()
	pgtest.Exec(t, url, `ALTER TABLE entries DISABLE TRIGGER entries_append_only`)
}
