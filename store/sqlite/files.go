package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/custody-dev/custody"
)

// The data directory holds the evidence and the key that signs it: only
// its owner may use it. Open makes it 0700 and every file it creates 0600
// (SQLite gives the log and shared-memory files the database's mode). A
// directory that holds no ledger yet is made 0700 whatever its mode; one
// that holds a ledger, with the directory or a file that others may read
// or write, is refused with the chmod that fixes it: custody does not
// change the modes of an existing ledger behind its owner's back.
// signing.pub alone may be readable: it is public.

// prepareDir creates dir (0700) when missing and checks the modes of it
// and of the files in it.
func prepareDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	if runtime.GOOS == "windows" {
		return nil // modes there are not permissions: access lists are
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	if !fi.IsDir() {
		return custody.Errorf(custody.EUNAVAILABLE, "data directory %s is not a directory", dir)
	}
	_, err = os.Stat(filepath.Join(dir, DatabaseFile))
	isNew := errors.Is(err, fs.ErrNotExist)
	if perm := fi.Mode().Perm(); perm&0o077 != 0 && isNew {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("make the data directory private: %w", err)
		}
	} else if perm&0o077 != 0 {
		return custody.Errorf(custody.EUNAVAILABLE,
			"data directory %s has mode %#o: it holds the ledger and its signing key, so only its owner may use it: chmod 700 %s",
			dir, perm, dir)
	}
	return checkFileModes(dir)
}

// checkFileModes refuses files in dir that others may read or write.
func checkFileModes(dir string) error {
	des, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	var open []string
	for _, de := range des {
		if !de.Type().IsRegular() || de.Name() == publicKeyFile {
			continue
		}
		fi, err := de.Info()
		if err != nil {
			continue // removed meanwhile
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			open = append(open, fmt.Sprintf("%s (%#o)", de.Name(), perm))
		}
	}
	if len(open) == 0 {
		return nil
	}
	slices.Sort(open)
	return custody.Errorf(custody.EUNAVAILABLE,
		"files in data directory %s may be read by others: %s: chmod 600 them", dir, strings.Join(open, ", "))
}

// createPrivate creates the empty file name with mode 0600 unless it
// exists, so that SQLite opens it rather than creating it with the
// process's default mode.
func createPrivate(name string) error {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", filepath.Base(name), err)
	}
	return f.Close()
}

// fileWatch notices the database file being removed or replaced under a
// running store: SQLite would go on writing to the unlinked file, and
// every acknowledged write would be lost at the next start.
type fileWatch struct {
	path   string
	opened os.FileInfo
	// failed is set once the file was found gone or replaced: the store
	// then refuses writes until it is opened again.
	failed atomic.Pointer[error]
}

func watchFile(path string) (*fileWatch, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("database file: %w", err)
	}
	return &fileWatch{path: path, opened: fi}, nil
}

// check returns an error once the file at path is no longer the one
// opened. It costs one stat.
func (f *fileWatch) check() error {
	if p := f.failed.Load(); p != nil {
		return *p
	}
	fi, err := os.Stat(f.path)
	var why string
	switch {
	case errors.Is(err, fs.ErrNotExist):
		why = "was removed"
	case err != nil:
		return nil // a transient stat failure says nothing about the file
	case !os.SameFile(fi, f.opened):
		why = "was replaced by another file"
	default:
		return nil
	}
	err = fmt.Errorf("%s %s while the store was open: writes are refused until the store is opened again", f.path, why)
	f.failed.CompareAndSwap(nil, &err)
	return *f.failed.Load()
}
