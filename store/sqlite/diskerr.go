package sqlite

import (
	"context"
	"errors"
	"fmt"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// primaryCode returns the primary result code of the SQLite error in
// err's chain, if there is one.
func primaryCode(err error) (int, bool) {
	var se *msqlite.Error
	if !errors.As(err, &se) {
		return 0, false
	}
	return se.Code() & 0xff, true // an extended code keeps the primary in its low byte
}

// resourceFailed reports whether err is SQLite's for a resource that
// failed (the disk full or failing, a file that cannot be opened, a lock
// held, memory) or a context's, rather than for a database that is wrong.
func resourceFailed(err error) bool {
	code, ok := primaryCode(err)
	if !ok {
		return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
	}
	switch code {
	case sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_BUSY,
		sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_NOMEM, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PROTOCOL:
		return true
	}
	return false
}

// withFreeSpace adds to err, when it is SQLite's for a full or failing
// disk, how much space the filesystem holding dir has left: SQLite
// reports a disk too full to grow its shared-memory file as a plain I/O
// error, which an operator would take for a broken disk.
func withFreeSpace(err error, dir string) error {
	if code, ok := primaryCode(err); !ok || (code != sqlite3.SQLITE_FULL && code != sqlite3.SQLITE_IOERR) {
		return err
	}
	free, ok := freeBytes(dir)
	if !ok {
		return err
	}
	return fmt.Errorf("%w (the filesystem holding %s has %s free)", err, dir, byteSize(free))
}

// byteSize renders n bytes for a person: 512 bytes, 3.5 MiB.
func byteSize(n uint64) string {
	if n < 1024 {
		return fmt.Sprintf("%d bytes", n)
	}
	v, unit := float64(n)/1024, "KiB"
	for _, u := range []string{"MiB", "GiB", "TiB"} {
		if v < 1024 {
			break
		}
		v, unit = v/1024, u
	}
	return fmt.Sprintf("%.1f %s", v, unit)
}
