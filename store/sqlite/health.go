package sqlite

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/custody-dev/custody"
)

// writeHealth remembers whether the store's last write failed for want of
// a resource (a full disk, a read-only filesystem, an I/O error), so that
// a health check reports what the next write would most likely meet
// rather than what the last read did.
type writeHealth struct {
	failed atomic.Pointer[healthFailure]
}

type healthFailure struct {
	err error
	at  time.Time
}

// observe records the outcome of a committed or refused batch: a
// resource failure marks the store unhealthy, any commit heals it.
func (h *writeHealth) observe(err error, now time.Time) {
	switch {
	case err == nil:
		if h.failed.Load() != nil {
			h.failed.Store(nil)
		}
	case resourceFailed(err) && !isContextErr(err):
		h.failed.Store(&healthFailure{err: err, at: now})
	}
}

func isContextErr(err error) bool {
	_, sqliteErr := primaryCode(err)
	return !sqliteErr
}

// Health returns nil while the store can write, and otherwise an
// EUNAVAILABLE error saying why not: the store was fenced (see Fence),
// the database file was removed or
// replaced, an fsync failed (both until the store is opened again), or
// the last write was refused (a full disk, a read-only filesystem, an I/O
// error; until a write succeeds again).
//
// The message names the reason without paths, so that an unauthenticated
// health check may show it; the error it wraps has the detail.
func (db *DB) Health(ctx context.Context) error {
	w := db.w
	if err := w.fenced(); err != nil {
		return cannotWrite(err.Error(), err)
	}
	if err := w.files.check(); err != nil {
		return cannotWrite("the database file was removed or replaced while the store was open; restart it", err)
	}
	if err := w.sync.err(); err != nil {
		return cannotWrite("an fsync of the write-ahead log failed; restart it", err)
	}
	if f := w.health.failed.Load(); f != nil {
		return cannotWrite(fmt.Sprintf("the last write, at %s, was refused (%s); it recovers once a write succeeds",
			f.at.UTC().Format(time.RFC3339), sqliteReason(f.err)), f.err)
	}
	return nil
}

func cannotWrite(reason string, err error) error {
	return &custody.Error{Kind: custody.EUNAVAILABLE, Message: "the store cannot write: " + reason, Err: err}
}

// sqliteReason names a resource failure in a few words.
func sqliteReason(err error) string {
	code, _ := primaryCode(err)
	switch code {
	case sqlite3.SQLITE_FULL:
		return "disk full"
	case sqlite3.SQLITE_READONLY:
		return "read-only"
	case sqlite3.SQLITE_IOERR:
		return "I/O error"
	case sqlite3.SQLITE_CANTOPEN:
		return "cannot open a file"
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return "locked by another process"
	case sqlite3.SQLITE_NOMEM:
		return "out of memory"
	}
	return "storage failure"
}

// Fence refuses every write from now on (appends, commits, checkpoints,
// approval and state changes) with EUNAVAILABLE, as a database file
// removed under the running store does, and makes Health report reason
// until the store is opened again. It is how a failed verification of
// the whole chain closes the store: nothing more is chained, nor signed,
// onto a ledger found changed. reason names the cause without paths.
// The first reason given stays.
func (db *DB) Fence(reason error) {
	db.w.fence.CompareAndSwap(nil, &reason)
}

// fenced returns the reason the store was fenced, nil when it was not.
func (w *writer) fenced() error {
	if p := w.fence.Load(); p != nil {
		return *p
	}
	return nil
}
