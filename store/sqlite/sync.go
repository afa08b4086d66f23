package sqlite

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/queue"
)

// The write connection commits with synchronous=NORMAL: a commit writes
// its frames to the write-ahead log and returns without waiting for the
// disk. The syncer then makes them durable with one fdatasync of the log
// and only then answers the batch's requests, publishes the head and
// feeds the index. Meanwhile the writer goes on to the next batch, so
// inserting one batch overlaps the fsync of the one before, and one fsync
// covers every batch committed while the last one ran.
//
// Durability is the same as synchronous=FULL for everything a caller is
// told: a request is answered only after an fsync of the log that began
// after its commit, and the log is a sequence whose frames recovery keeps
// up to the first one missing, so an entry that is durable has every
// earlier entry durable too. What changes is what readers see: for the
// span of one fsync, a read (in this process or another) may return an
// entry that a power loss would still take back, with everything after
// it. A write that follows such a read lands later in the log, so it is
// answered only once the entry read is durable too: the gateway runs no
// WRITE handler before its call.started entry is answered. Only what a
// reader does outside the store with a read (shows it, sends it on) can
// run ahead of the disk, and by one fsync at most.
//
// A failed fsync leaves the log's state on disk unknown, and a second
// fsync may report success for pages the kernel has dropped. The store
// then fails closed: the requests of every batch not yet synced are
// answered unavailable, and every later write is refused until the store
// is opened again, when recovery settles what the log holds.

// synced is a committed batch waiting for its fsync.
type synced struct {
	b    *batch
	reqs []*request
}

// syncer makes what the writer commits durable, in commit order.
type syncer struct {
	path   string // the write-ahead log
	f      *os.File
	fsync  func(*os.File) error
	queue  chan synced
	failed atomic.Pointer[error] // set once an fsync failed
	log    *slog.Logger
}

// newSyncer returns a syncer of the log of the database at dbPath that
// syncs with fsync (fdatasync when nil) and reports its failure to log
// (nowhere when nil).
func newSyncer(dbPath string, fsync func(*os.File) error, log *slog.Logger) *syncer {
	if fsync == nil {
		fsync = fdatasync
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &syncer{path: dbPath + "-wal", fsync: fsync, queue: make(chan synced, queueSize), log: log}
}

// run syncs the batches queued, grouping those that queue while one fsync
// runs, and hands each group to answer with the outcome, until the queue
// is closed.
func (s *syncer) run(answer func(batches []synced, err error)) {
	buf := make([]synced, 0, maxBatch)
	for b := range s.queue {
		buf = queue.Drain(append(buf[:0], b), s.queue, maxBatch)
		answer(buf, s.sync())
		clear(buf)
	}
}

// err returns the failure that stopped the syncer, or nil.
func (s *syncer) err() error {
	if p := s.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// sync makes everything written to the log so far durable.
func (s *syncer) sync() error {
	if err := s.err(); err != nil {
		return err
	}
	first := s.f == nil
	if first {
		f, err := os.OpenFile(s.path, os.O_RDWR, 0)
		if err != nil {
			return s.fail(fmt.Errorf("open write-ahead log: %w", err))
		}
		s.f = f
	}
	if err := s.fsync(s.f); err != nil {
		return s.fail(fmt.Errorf("sync write-ahead log: %w", err))
	}
	if first {
		// The log may be new: its name must be durable too, as SQLite
		// makes it at the first sync of a log it created.
		if err := syncDir(filepath.Dir(s.path)); err != nil {
			return s.fail(fmt.Errorf("write-ahead log: %w", err))
		}
	}
	return nil
}

// fail stops the syncer: err and every later sync fail.
func (s *syncer) fail(err error) error {
	err = fmt.Errorf("%w; writes are refused until the store is opened again", err)
	if s.failed.CompareAndSwap(nil, &err) {
		s.log.Error("the store failed closed: restart it", "log", s.path, "err", err)
	}
	return s.err()
}

// close releases the log's file; run has returned.
func (s *syncer) close() error {
	if s.f == nil {
		return nil
	}
	return s.f.Close()
}

// runSync answers the batches the writer commits as they become durable.
func (w *writer) runSync(done chan<- struct{}) {
	defer close(done)
	w.sync.run(func(batches []synced, err error) {
		for _, s := range batches {
			w.durable(s, err)
		}
	})
}

// durable answers a synced batch: its head goes to readers, unless the
// fsync failed.
func (w *writer) durable(s synced, err error) {
	if err != nil {
		for _, r := range s.reqs {
			r.resp.entry, r.resp.cp = custody.Entry{}, custody.Checkpoint{}
			if r.resp.err == nil {
				r.resp.err = unavailable(r.what, err)
			}
		}
	} else {
		if len(s.b.entries) > 0 {
			w.publish(s.b.head)
		}
		if s.b.cp != nil && w.record != nil {
			w.record.note(*s.b.cp)
		}
	}
	for _, r := range s.reqs {
		r.done <- struct{}{}
	}
}
