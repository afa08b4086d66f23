package rawpg

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/bench"
	"github.com/custody-dev/custody/store/postgres"
	"github.com/custody-dev/custody/store/postgres/pgtest"
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

// TestHeadLocked drives several writers at once: every insert lands, on
// one chain with no gap or fork (two writers holding the same head would
// insert the same seq and fail), and the head names its end.
func TestHeadLocked(t *testing.T) {
	dsn := pgtest.URL(t)
	const writers, callers, each = 3, 8, 20
	var rows, commits int64
	err := headLockedIn(context.Background(), dsn, writers, func(f *Floor) error {
		if err := insertAll(f, callers, each); err != nil {
			return err
		}
		rows, commits = f.Committed()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if rows != callers*each || commits < writers || commits > rows {
		t.Errorf("%d rows in %d commits, want %d rows in %d to %d commits", rows, commits, callers*each, writers, callers*each)
	}
	if n := pgtest.QueryInt(t, dsn, `SELECT count(*) FROM entries`); n != callers*each {
		t.Errorf("%d rows in the table, want %d", n, callers*each)
	}
	const broken = `SELECT count(*) FROM (SELECT seq, prev, lag(hash, 1, '') OVER (ORDER BY seq) AS before,
		row_number() OVER (ORDER BY seq) AS n FROM entries) c WHERE prev <> before OR seq <> n`
	if n := pgtest.QueryInt(t, dsn, broken); n != 0 {
		t.Errorf("%d rows off the chain", n)
	}
	if seq := pgtest.QueryInt(t, dsn, `SELECT seq FROM ledger_head WHERE hash = seq::text AND pending_since IS NOT NULL`); seq != callers*each {
		t.Errorf("the head is at %d, want %d", seq, callers*each)
	}
}

func TestHeadLockedRefusals(t *testing.T) {
	base := os.Getenv(pgtest.EnvURL)
	if base == "" {
		t.Skip(pgtest.EnvURL + " is unset: no PostgreSQL to test against")
	}
	err := HeadLocked(context.Background(), base, 0, func(*Floor) error { return nil })
	if custody.ErrorKind(err) != custody.EINVALID {
		t.Errorf("no writers: err = %v, want invalid", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	err = HeadLocked(ctx, base, 2, func(f *Floor) error {
		if err := f.Insert(bench.SampleEntry(0, 0)); err != nil {
			return err
		}
		cancel()
		return f.Insert(bench.SampleEntry(0, 1))
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: err = %v, want context.Canceled", err)
	}
}

// insertAll inserts each sample rows from each of callers goroutines and
// returns the first error.
func insertAll(f *Floor, callers, each int) error {
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for w := range callers {
		wg.Go(func() {
			for i := range each {
				if err := f.Insert(bench.SampleEntry(w, i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// TestTableAsTheStores keeps the baseline and the floor honest: their
// tables have the columns, types and nullability of the ones the store's
// migrations make.
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
	pgtest.Exec(t, raw, headTable)
	for _, table := range []string{"entries", "ledger_head"} {
		if got, want := describe(t, raw, table), describe(t, store, table); got != want {
			t.Errorf("the baseline's %s is\n%s\nthe store's is\n%s", table, got, want)
		}
	}
}

// describe lists table's columns in the schema dsn searches.
func describe(t *testing.T, dsn, table string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var s string
	err = conn.QueryRow(ctx, `SELECT string_agg(column_name || ' ' || data_type || ' ' || is_nullable, ', ' ORDER BY ordinal_position)
		FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1`, table).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
