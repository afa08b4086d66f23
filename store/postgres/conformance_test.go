package postgres

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/store/postgres/pgtest"
	"github.com/custody-dev/custody/store/storetest"
)

// open opens a store on a fresh schema, closed when t ends.
func open(t *testing.T, url string, opts Options) *DB {
	t.Helper()
	if opts.KeyFile == "" {
		opts.KeyFile = filepath.Join(t.TempDir(), "signing.key")
	}
	db, err := Open(context.Background(), url, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestConformance(t *testing.T) {
	pgtest.Require(t)
	storetest.Run(t, func(t *testing.T) custody.Store {
		return open(t, pgtest.URL(t), Options{})
	})
}
