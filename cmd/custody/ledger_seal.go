package main

import (
	"context"
	"fmt"

	"github.com/custody-dev/custody/store/sqlite"
)

// runLedgerSeal signs a checkpoint over the entries after the last one.
// Entries this data directory's writer cannot vouch for (appended by a
// process without the signing key) are refused unless --accept-tail says
// an operator looked at them; the acceptance is then recorded on the
// ledger, in the same commit as the checkpoint.
func (m *Main) runLedgerSeal(ctx context.Context, args []string) int {
	fs := m.flags("ledger seal", "[--data DIR] [--accept-tail]")
	data := m.dataFlag(fs)
	accept := fs.Bool("accept-tail", false, "accept entries after the last checkpoint that this data directory did not write, recording that on the ledger")
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if db, code := m.openExisting(*data); db == nil {
		return code
	} else if err := db.Close(); err != nil {
		return m.fail(err)
	}
	db, err := m.openDataWith(*data, sqlite.Options{AcceptTail: *accept})
	if err != nil {
		return m.fail(err)
	}
	cp, cerr := db.Checkpoint(ctx)
	if err := db.Close(); err != nil {
		return m.fail(err)
	}
	if cerr != nil {
		return m.fail(cerr)
	}
	fmt.Fprintf(m.Stdout, "sealed: a checkpoint of ledger %s covers %d entries, head %s\n", cp.Ledger, cp.Size, cp.Head)
	return exitOK
}

// runLedgerRotateKey replaces the checkpoint signing key: the ledger
// records the old and the new public key and a checkpoint signed with the
// new one, and signing.pub lists both, so that exports verify across the
// rotation.
func (m *Main) runLedgerRotateKey(ctx context.Context, args []string) int {
	fs := m.flags("ledger rotate-key", "[--data DIR] [--accept-tail]")
	data := m.dataFlag(fs)
	accept := fs.Bool("accept-tail", false, "accept entries after the last checkpoint, which a lost key cannot vouch for, naming them on the ledger")
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if db, code := m.openExisting(*data); db == nil {
		return code
	} else if err := db.Close(); err != nil {
		return m.fail(err)
	}
	old, new, err := sqlite.RotateKey(*data, sqlite.Options{AcceptTail: *accept})
	if err != nil {
		return m.fail(err)
	}
	fmt.Fprintf(m.Stdout, "rotated: checkpoints are signed by %x from now on (was %x); signing.pub lists both\n", []byte(new), []byte(old))
	return exitOK
}
