package sqlite

import (
	"context"
	"errors"
	"os"
	"testing"
)

func TestRawGroupCommit(t *testing.T) {
	dir := t.TempDir()
	stop := errors.New("the load is done")
	err := RawGroupCommit(context.Background(), dir, func(g *RawGroup) error {
		for i := range 10 {
			if err := g.Insert(SampleEntry(0, i)); err != nil {
				return err
			}
			// One inserter waits for each row: every row is its own commit.
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
}

func TestRawGroupCommitCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	err := RawGroupCommit(ctx, t.TempDir(), func(g *RawGroup) error {
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
