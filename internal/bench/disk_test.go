package bench

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// The disk floor's appends land in its log, share fsyncs when they come
// together, and the log is gone once it closes.
func TestDiskFloor(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d, err := OpenDiskFloor(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := d.f.Stat(); err != nil || st.Size() != floorBlocks*floorBlock {
		t.Fatalf("the log is %d bytes (%v), want it written to %d first", st.Size(), err, floorBlocks*floorBlock)
	}
	var wg sync.WaitGroup
	const n = 200
	for range n {
		wg.Go(func() {
			if err := d.Append(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if rows, commits := d.Committed(); rows != n || commits < 1 || commits > n {
		t.Errorf("%d appends: %d durable in %d fsyncs", n, rows, commits)
	}
	name := d.f.Name()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(name); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the log outlived close: %v", err)
	}
}

// An append the disk refuses fails, and is not counted as durable.
func TestDiskFloorWriteFails(t *testing.T) {
	d, err := OpenDiskFloor(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	name := d.f.Name()
	d.f.Close() // every write now fails
	if err := d.Append(context.Background()); !errors.Is(err, os.ErrClosed) {
		t.Errorf("append to a closed log: %v, want os.ErrClosed", err)
	}
	if rows, commits := d.Committed(); rows != 0 || commits != 0 {
		t.Errorf("a failed append counted: %d rows in %d fsyncs", rows, commits)
	}
	close(d.reqs)
	d.done.Wait()
	os.Remove(name)
}

// An append whose caller gives up while the queue is full returns the
// caller's error rather than waiting.
func TestDiskFloorCanceled(t *testing.T) {
	d := &DiskFloor{reqs: make(chan chan error)} // no writer: nothing is taken
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.Append(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("append with a canceled context: %v", err)
	}
}

// prewrite replaces what the file held with the log's length of zeros.
func TestPrewrite(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "p")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte("junk")); err != nil {
		t.Fatal(err)
	}
	if err := prewrite(f); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != floorBlocks*floorBlock || !bytes.Equal(got, make([]byte, len(got))) {
		t.Errorf("prewritten log: %d bytes, want %d zeros", len(got), floorBlocks*floorBlock)
	}
}

// The fsync probe reports ordered percentiles and leaves nothing behind;
// a directory it cannot write in is an error.
func TestFsyncLatency(t *testing.T) {
	dir := t.TempDir()
	p50, p99, err := FsyncLatency(dir, 20)
	if err != nil || p50 <= 0 || p99 < p50 {
		t.Fatalf("p50 %s, p99 %s, %v", p50, p99, err)
	}
	if left, err := os.ReadDir(dir); err != nil || len(left) != 0 {
		t.Errorf("the probe left %v (%v)", left, err)
	}
	if _, _, err := FsyncLatency(filepath.Join(dir, "no", "such"), 20); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("probe in a missing directory: %v, want os.ErrNotExist", err)
	}
}
