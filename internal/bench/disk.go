package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/custody-dev/custody/internal/queue"
)

// FsyncLatency writes and syncs n 4 KiB blocks to a scratch file in dir
// and returns the median and 99th percentile of one write plus fsync:
// the floor under every durable call's latency, on this disk now. n is
// positive; a failure to create, write or sync the file is returned as
// it is.
func FsyncLatency(dir string, n int) (p50, p99 time.Duration, err error) {
	f, err := os.CreateTemp(dir, "fsync-probe-")
	if err != nil {
		return 0, 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	block := make([]byte, 4096)
	lat := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if _, err := f.Write(block); err != nil {
			return 0, 0, err
		}
		if err := f.Sync(); err != nil {
			return 0, 0, err
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	return lat[n/2], lat[n*99/100], nil
}

// Sizes of the disk floor's log.
const (
	floorBlock  = 4096     // one append
	floorBlocks = 4096     // the log's length, in blocks, reused in a ring
	floorBatch  = 1024     // the most appends one fsync covers
	floorQueue  = 4 * 1024 // appends that may wait for the writer
)

// DiskFloor is the least a durable log can do on this disk, the floor
// under any durable call's latency: an append writes one 4 KiB block over
// an already written and synced file, so no fsync has a file size or block
// map to record, and returns once an fsync that began after its write has
// finished. Appends that arrive while an fsync runs share the next one, a
// group commit as the store's. There is no database, no encoding, no
// hashing: what remains of an append's latency is the disk's and the
// scheduler's.
type DiskFloor struct {
	f             *os.File
	reqs          chan chan error
	done          sync.WaitGroup
	rows, commits atomic.Int64
}

// OpenDiskFloor writes the floor's log in dir, syncs it, and starts its
// writer.
func OpenDiskFloor(dir string) (*DiskFloor, error) {
	f, err := os.CreateTemp(dir, "disk-floor-")
	if err != nil {
		return nil, fmt.Errorf("bench: disk floor: %w", err)
	}
	if err := prewrite(f); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("bench: disk floor: %w", err)
	}
	d := &DiskFloor{f: f, reqs: make(chan chan error, floorQueue)}
	d.done.Go(d.write)
	return d, nil
}

// prewrite fills f to the log's length and syncs it.
func prewrite(f *os.File) error {
	zeros := make([]byte, 64*floorBlock)
	for off := int64(0); off < floorBlocks*floorBlock; off += int64(len(zeros)) {
		if _, err := f.WriteAt(zeros, off); err != nil {
			return err
		}
	}
	return f.Sync()
}

// Append writes one block and returns once it is durable: nil once an
// fsync that began after the write has finished, the write's or the
// fsync's error, or ctx's when it ends before the writer takes the block.
func (d *DiskFloor) Append(ctx context.Context) error {
	r := make(chan error, 1)
	select {
	case d.reqs <- r:
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-r
}

// write is the writer loop: take what waits, write a block for each, one
// fsync, acknowledge.
func (d *DiskFloor) write() {
	block := make([]byte, floorBlock)
	var next int64
	taken := make([]chan error, 0, floorBatch)
	for r := range d.reqs {
		taken = queue.Gather(append(taken[:0], r), d.reqs, floorBatch)
		var err error
		for range taken {
			if _, werr := d.f.WriteAt(block, next%floorBlocks*floorBlock); werr != nil {
				err = errors.Join(err, werr)
			}
			next++
		}
		if err == nil {
			err = d.f.Sync()
		}
		if err == nil {
			d.rows.Add(int64(len(taken)))
			d.commits.Add(1)
		}
		for _, r := range taken {
			r <- err
		}
	}
}

// Committed returns how many appends were made durable, in how many
// fsyncs.
func (d *DiskFloor) Committed() (rows, commits int64) {
	return d.rows.Load(), d.commits.Load()
}

// Close stops the writer and removes the log. No Append may be under way
// or follow.
func (d *DiskFloor) Close() error {
	close(d.reqs)
	d.done.Wait()
	err := d.f.Close()
	return errors.Join(err, os.Remove(d.f.Name()))
}
