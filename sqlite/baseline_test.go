package sqlite

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/custody-dev/custody"
)

func TestRawGroupCommit(t *testing.T) {
	dir := t.TempDir()
	stop := errors.New("the load is done")
	err := RawGroupCommit(context.Background(), dir, func(insert func(custody.Entry) error) error {
		for i := range 10 {
			if err := insert(SampleEntry(0, i)); err != nil {
				return err
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
	err := RawGroupCommit(ctx, t.TempDir(), func(insert func(custody.Entry) error) error {
		if err := insert(SampleEntry(0, 0)); err != nil {
			return err
		}
		cancel()
		return insert(SampleEntry(0, 1))
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
