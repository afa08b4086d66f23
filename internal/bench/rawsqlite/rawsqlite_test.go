package rawsqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/custody-dev/custody/internal/bench"
	"github.com/custody-dev/custody/store/sqlite"
)

func TestGroupCommit(t *testing.T) {
	for _, mode := range []Sync{SyncFull, SyncPipelined} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			stop := errors.New("the load is done")
			err := GroupCommit(context.Background(), dir, mode, func(g *Group) error {
				for i := range 10 {
					if err := g.Insert(bench.SampleEntry(0, i)); err != nil {
						return err
					}
					// One inserter waits for each row: every row is its
					// own commit, counted once it is durable.
					if rows, commits := g.Committed(); rows != int64(i+1) || commits != int64(i+1) {
						t.Errorf("after insert %d: %d rows in %d commits, want %d in %d", i, rows, commits, i+1, i+1)
					}
				}
				return stop
			})
			if !errors.Is(err, stop) {
				t.Fatalf("err = %v, want the load's own error", err)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Fatalf("the scratch store is left behind: %v", left)
			}
		})
	}
}

func TestGroupCommitConcurrent(t *testing.T) {
	for _, mode := range []Sync{SyncFull, SyncPipelined} {
		t.Run(mode.String(), func(t *testing.T) {
			const writers, each = 16, 50
			err := GroupCommit(context.Background(), t.TempDir(), mode, func(g *Group) error {
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
	ctx, cancel := context.WithCancel(context.Background())
	err := GroupCommit(ctx, t.TempDir(), SyncFull, func(g *Group) error {
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

// TestRowsAsTheStoreWrites keeps the baseline honest: its insert names
// every column of the table the store's migrations make, in the store's
// order, and the same entry lands in each column with the storage class
// and size the store gives it (digests as 32-byte BLOBs).
func TestRowsAsTheStoreWrites(t *testing.T) {
	ctx := context.Background()
	e := bench.SampleEntry(3, 7)
	data := t.TempDir()
	db, err := sqlite.Open(ctx, data, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Append(ctx, e)
	if err := errors.Join(err, db.Close()); err != nil {
		t.Fatal(err)
	}
	want := lastRow(t, filepath.Join(data, sqlite.DatabaseFile))
	dir := t.TempDir()
	err = GroupCommit(ctx, dir, SyncFull, func(g *Group) error {
		if err := g.Insert(e); err != nil {
			return err
		}
		path := filepath.Join(dir, scratchDir, sqlite.DatabaseFile)
		if got := tableColumns(t, path); !slices.Equal(got, columns) {
			t.Errorf("the entries table has columns %v, the baseline inserts %v", got, columns)
		}
		if got := lastRow(t, path); got != want {
			t.Errorf("the baseline's row is\n%s\nthe store's is\n%s", got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// lastRow describes the last entry of the database at path: each
// column's storage class, and its size or its value.
func lastRow(t *testing.T, path string) string {
	t.Helper()
	var row string
	err := readOnly(t, path).QueryRow(`SELECT concat_ws(' | ',
		typeof(seq), typeof(at), length(at), typeof(kind), kind, typeof(trace), trace,
		typeof(actor), actor, typeof(refs), refs, typeof(body), hex(body),
		typeof(body_sha256), length(body_sha256), typeof(hash), length(hash))
		FROM entries ORDER BY seq DESC LIMIT 1`).Scan(&row)
	if err != nil {
		t.Fatal(err)
	}
	return row
}

// tableColumns returns the columns of the entries table, in order.
func tableColumns(t *testing.T, path string) []string {
	t.Helper()
	rows, err := readOnly(t, path).Query(`SELECT name FROM pragma_table_info('entries') ORDER BY cid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, strings.ToLower(n))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

func readOnly(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path)+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
