package rawpg

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/custody-dev/custody/internal/bench"
	"github.com/custody-dev/custody/postgres"
	"github.com/custody-dev/custody/postgres/pgtest"
)

func TestGroupCommit(t *testing.T) {
	base := os.Getenv(pgtest.EnvURL)
	if base == "" {
		t.Skip(pgtest.EnvURL + " is unset: no PostgreSQL to test against")
	}
	for _, pipelined := range []bool{false, true} {
		t.Run(map[bool]string{false: "full", true: "pipelined"}[pipelined], func(t *testing.T) {
			const writers, each = 8, 20
			err := GroupCommit(context.Background(), base, pipelined, func(g *Group) error {
				var wg sync.WaitGroup
				errs := make(chan error, writers)
				for w := range writers {
					wg.Go(func() {
						for i := range each {
							if err := g.Insert(bench.SampleEntry(w, i)); err != nil {
								errs <- err
								return
							}
						}
					})
				}
				wg.Wait()
				close(errs)
				if err := <-errs; err != nil {
					return err
				}
				rows, commits := g.Committed()
				if rows != writers*each || commits < 1 || commits > rows {
					t.Errorf("%d rows in %d commits, want %d rows in 1 to %d commits", rows, commits, writers*each, writers*each)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestGroupCommitCancelled(t *testing.T) {
	base := os.Getenv(pgtest.EnvURL)
	if base == "" {
		t.Skip(pgtest.EnvURL + " is unset: no PostgreSQL to test against")
	}
	ctx, cancel := context.WithCancel(context.Background())
	err := GroupCommit(ctx, base, false, func(g *Group) error {
		if err := g.Insert(bench.SampleEntry(0, 0)); err != nil {
			return err
		}
		cancel()
		return g.Insert(bench.SampleEntry(0, 1))
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestTableAsTheStores keeps the baseline honest: its table has the
// columns, types and nullability of the one the store's migrations make.
func TestTableAsTheStores(t *testing.T) {
	store, raw := pgtest.URL(t), pgtest.URL(t)
	db, err := postgres.Open(context.Background(), store, postgres.Options{KeyFile: filepath.Join(t.TempDir(), "signing.key")})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, raw, entriesTable)
	if got, want := describe(t, raw), describe(t, store); got != want {
		t.Errorf("the baseline's table is\n%s\nthe store's is\n%s", got, want)
	}
}

// describe lists the entries table's columns in the schema dsn searches.
func describe(t *testing.T, dsn string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var s string
	err = conn.QueryRow(ctx, `SELECT string_agg(column_name || ' ' || data_type || ' ' || is_nullable, ', ' ORDER BY ordinal_position)
		FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'entries'`).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
