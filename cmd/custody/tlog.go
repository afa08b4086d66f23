package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/custody-dev/custody/store/sqlite"
	"github.com/custody-dev/custody/tlog"
)

// witnessFlags are the flags that make `ledger verify` require witnesses'
// cosignatures on every checkpoint note.
type witnessFlags struct {
	keys   stringList
	quorum int
}

func addWitnessFlags(fs *flag.FlagSet) *witnessFlags {
	w := &witnessFlags{}
	fs.Var(&w.keys, "witness-key", "require cosignatures by the witness whose verifier `KEY` this is (repeatable)")
	fs.IntVar(&w.quorum, "witness-quorum", 0, "how many of the --witness-key witnesses must cosign each checkpoint `N` (0: all of them)")
	return w
}

// verifiers parses the witness keys and settles the quorum.
func (w *witnessFlags) verifiers() ([]note.Verifier, int, error) {
	var vs []note.Verifier
	for _, k := range w.keys {
		v, err := tlog.NewWitnessVerifier(k)
		if err != nil {
			return nil, 0, err
		}
		vs = append(vs, v)
	}
	q := w.quorum
	if q == 0 {
		q = len(vs)
	}
	if q < 0 || q > len(vs) {
		return nil, 0, fmt.Errorf("--witness-quorum %d: want 1 to the %d witness keys given", q, len(vs))
	}
	return vs, q, nil
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// notesChecked prints the outcome of checking the checkpoint notes with c,
// err being the first failure, and returns the exit code; it calls
// c.Finish when there was none.
func (m *Main) notesChecked(what string, c *tlog.NoteChecker, err error, ws []note.Verifier, quorum int) int {
	var ne *tlog.NoteError
	if errors.As(err, &ne) {
		fmt.Fprintf(m.Stderr, "%s: FAILED at checkpoint %d: %s\n", what, ne.Size, ne.Reason)
		return exitFailed
	}
	if err != nil {
		return m.fail(err)
	}
	if err := c.Finish(); errors.As(err, &ne) {
		fmt.Fprintf(m.Stderr, "%s: FAILED after entry %d: %s\n", what, ne.Size, ne.Reason)
		return exitFailed
	}
	msg := fmt.Sprintf("ok: %d checkpoint notes match the Merkle tree over the entries", c.Notes())
	if len(ws) > 0 {
		msg += fmt.Sprintf(", each cosigned by at least %d of %d witnesses", quorum, len(ws))
	}
	fmt.Fprintln(m.Stdout, msg)
	return exitOK
}

// runLedgerProve prints, from a store, the receipt of entry --seq with its
// inclusion proof in the latest checkpoint (or the one of --size), or the
// consistency proof between the checkpoints of sizes --from and --to. The
// output is what GET /v1/ledger/proof and /v1/ledger/consistency answer;
// check-receipt verifies a receipt offline.
func (m *Main) runLedgerProve(ctx context.Context, args []string) int {
	fs := m.flags("ledger prove", "(--seq N [--size S] | --from A --to B) [--data DIR]")
	data := m.dataFlag(fs)
	seq := fs.Uint64("seq", 0, "prove that entry `N` is in a checkpoint")
	size := fs.Uint64("size", 0, "the checkpoint of size `S` (default: the latest)")
	from := fs.Uint64("from", 0, "prove the checkpoint of size `A` a prefix of --to's")
	to := fs.Uint64("to", 0, "the later checkpoint's size `B`")
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if (*seq == 0) == (*to == 0) {
		return m.flagError(fs, "give --seq, or --from and --to")
	}
	db, code := m.openExistingSQLite(*data)
	if db == nil {
		return code
	}
	defer db.Close()
	var out any
	var err error
	if *seq > 0 {
		var r tlog.Receipt
		if r, err = db.Receipt(ctx, *seq, *size); err == nil {
			_, err = r.Verify(db.PublicKey(), db.Origin())
		}
		out = r
	} else {
		var c tlog.Consistency
		if c, err = db.Consistency(ctx, *from, *to); err == nil {
			err = c.Verify(db.PublicKey(), db.Origin())
		}
		out = c
	}
	if err != nil {
		return m.fail(err)
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	fmt.Fprintf(m.Stdout, "%s\n", b)
	return exitOK
}

// runLedgerNoteKey prints the ledger's origin and the note verifier key of
// its checkpoints: what a witness is told to follow the ledger by
// (witnessctl add-log -origin, add-key -key).
func (m *Main) runLedgerNoteKey(_ context.Context, args []string) int {
	fs := m.flags("ledger note-key", "[--data DIR]")
	data := m.dataFlag(fs)
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	db, code := m.openExistingSQLite(*data)
	if db == nil {
		return code
	}
	defer db.Close()
	vkey, err := tlog.VerifierKey(db.Origin(), db.PublicKey())
	if err != nil {
		return m.fail(err)
	}
	fmt.Fprintf(m.Stdout, "origin %s\nvkey %s\n", db.Origin(), vkey)
	return exitOK
}

// openExistingSQLite opens an existing SQLite store to read it: the
// Merkle tree and its notes are that store's.
func (m *Main) openExistingSQLite(dir string) (*sqlite.DB, int) {
	if m.env("CUSTODY_STORE", "") != "" {
		fmt.Fprintln(m.Stderr, "custody ledger: inclusion proofs and checkpoint notes are kept by the SQLite store; unset CUSTODY_STORE and name its --data")
		return nil, exitUsage
	}
	db, code := m.openExisting(dir)
	if db == nil {
		return nil, code
	}
	return db.(*sqlite.DB), exitOK
}
