package sqlite

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
)

func TestRawGroupCommit(t *testing.T) {
	for _, mode := range []RawSync{RawSyncFull, RawSyncPipelined} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			stop := errors.New("the load is done")
			err := RawGroupCommit(context.Background(), dir, mode, func(g *RawGroup) error {
				for i := range 10 {
					if err := g.Insert(SampleEntry(0, i)); err != nil {
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
				t.Fatalf("the scratch database is left behind: %v", left)
			}
		})
	}
}

func TestRawGroupCommitConcurrent(t *testing.T) {
	for _, mode := range []RawSync{RawSyncFull, RawSyncPipelined} {
		t.Run(mode.String(), func(t *testing.T) {
			const writers, each = 16, 50
			err := RawGroupCommit(context.Background(), t.TempDir(), mode, func(g *RawGroup) error {
				var wg sync.WaitGroup
				errs := make(chan error, writers)
				for w := range writers {
					wg.Go(func() {
						for i := range each {
							if err := g.Insert(SampleEntry(w, i)); err != nil {
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

func TestRawGroupCommitCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	err := RawGroupCommit(ctx, t.TempDir(), RawSyncFull, func(g *RawGroup) error {
		if err := g.Insert(SampleEntry(0, 0)); err != nil {
			return err
		}
		cancel()
		return g.Insert(SampleEntry(0, 1))
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
