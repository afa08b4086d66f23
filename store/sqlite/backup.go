package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
)

// Backup writes a consistent copy of the store to dest, a new directory
// (mode 0700), while the store stays in use: the database as of one read
// transaction (SQLite's VACUUM INTO, which also leaves out free pages),
// and beside it the files that make the data directory the ledger's
// home: ledger.id, the signing key and its public half, and the record
// of the last checkpoint. The record is copied before the database, so
// the copy never names a checkpoint its database lacks. Backup then
// opens the copy read-only and verifies its chain and checkpoints, and
// returns that report: a backup that does not verify is an error.
//
// dest holds the signing key: keep it as private as the data directory.
func (db *DB) Backup(ctx context.Context, dest string) (ledger.Report, error) {
	if err := newBackupDir(dest); err != nil {
		return ledger.Report{}, err
	}
	for _, name := range []string{ledgerIDFile, recordFile, publicKeyFile, privateKeyFile} {
		if err := copyDataFile(filepath.Join(db.dir, name), filepath.Join(dest, name)); err != nil {
			return ledger.Report{}, fmt.Errorf("backup %s: %w", name, err)
		}
	}
	out := filepath.Join(dest, DatabaseFile)
	if err := vacuumInto(ctx, filepath.Join(db.dir, DatabaseFile), out); err != nil {
		return ledger.Report{}, err
	}
	if err := os.Chmod(out, 0o600); err != nil {
		return ledger.Report{}, fmt.Errorf("backup: %w", err)
	}
	cp, err := Open(ctx, dest, Options{ReadOnly: true})
	if err != nil {
		return ledger.Report{}, fmt.Errorf("open the backup in %s: %w", dest, err)
	}
	defer cp.Close()
	rep, err := cp.Verify(ctx)
	if err != nil {
		return rep, fmt.Errorf("verify the backup in %s: %w", dest, err)
	}
	return rep, nil
}

// vacuumInto writes a copy of the database at path to out as of one read
// transaction. It uses a connection of its own: the read pool's are
// query-only, which SQLite takes to forbid writing even another file.
func vacuumInto(ctx context.Context, path, out string) error {
	src, err := sql.Open("sqlite", dsn(path, nil))
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer src.Close()
	if _, err := src.ExecContext(ctx, `VACUUM INTO ?`, out); err != nil {
		return fmt.Errorf("backup the database into %s: %w", out, err)
	}
	return nil
}

// newBackupDir creates dest, which must not exist or be an empty
// directory, with mode 0700.
func newBackupDir(dest string) error {
	des, err := os.ReadDir(dest)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dest, 0o700); err != nil {
			return fmt.Errorf("backup directory: %w", err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("backup directory: %w", err)
	case len(des) > 0:
		return custody.Errorf(custody.EINVALID, "backup directory %s is not empty: give a new one", dest)
	}
	if err := os.Chmod(dest, 0o700); err != nil {
		return fmt.Errorf("backup directory: %w", err)
	}
	return nil
}

// copyDataFile copies src to dst with src's mode; a missing src is skipped
// (a ledger that has signed no checkpoint yet has no record).
func copyDataFile(src, dst string) error {
	raw, err := os.ReadFile(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, raw, fi.Mode().Perm())
}
