package rawsqlite

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/custody-dev/custody/internal/queue"
)

// syncer makes what the pipelined writer commits durable, in commit
// order, as the store's syncer does (sqlite/sync.go): one fdatasync of
// the write-ahead log for every batch committed while the last one ran.
type syncer struct {
	path  string // the write-ahead log
	f     *os.File
	queue chan []*insert
}

func newSyncer(dbPath string) *syncer {
	return &syncer{path: dbPath + "-wal", queue: make(chan []*insert, queueSize)}
}

// run syncs the batches queued, grouping those that queue while one
// fsync runs, and hands each group to answer with the outcome, until the
// queue is closed.
func (s *syncer) run(answer func(batches [][]*insert, err error)) {
	buf := make([][]*insert, 0, maxBatch)
	for b := range s.queue {
		buf = queue.Drain(append(buf[:0], b), s.queue, maxBatch)
		answer(buf, s.sync())
		clear(buf)
	}
}

// sync makes everything written to the log so far durable; the first
// sync makes the log's name durable too.
func (s *syncer) sync() error {
	first := s.f == nil
	if first {
		f, err := os.OpenFile(s.path, os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("baseline: open write-ahead log: %w", err)
		}
		s.f = f
	}
	if err := fdatasync(s.f); err != nil {
		return fmt.Errorf("baseline: sync write-ahead log: %w", err)
	}
	if first {
		return syncDir(filepath.Dir(s.path))
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("baseline: sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("baseline: sync %s: %w", dir, err)
	}
	return nil
}

// close releases the log's file; run has returned.
func (s *syncer) close() error {
	if s.f == nil {
		return nil
	}
	return s.f.Close()
}
