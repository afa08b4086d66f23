package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
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

// runLedgerCheckReceipt verifies a receipt offline: the checkpoint's
// signature with --pubkey and the entry's inclusion proof against its
// root. It reads what prove prints, what GET /v1/ledger/proof answers, or
// a call's result fetched with ?proof=1.
func (m *Main) runLedgerCheckReceipt(_ context.Context, args []string) int {
	fs := m.flags("ledger check-receipt", "RECEIPT --pubkey FILE [--origin O]")
	pubFile := fs.String("pubkey", "", "the ledger's PEM public key `FILE` (required)")
	origin := fs.String("origin", "", "require the checkpoint to name origin `O`")
	file, rest := splitFirstArg(args)
	if ok, code := m.parse(fs, rest); !ok {
		return code
	}
	if file == "" && fs.NArg() == 1 {
		file = fs.Arg(0)
	}
	if file == "" || *pubFile == "" || fs.NArg() > 1 || (fs.NArg() == 1 && file != fs.Arg(0)) {
		return m.flagError(fs, "give one RECEIPT file (- for stdin) and --pubkey")
	}
	keys, err := readPublicKeys(*pubFile)
	if err != nil {
		fmt.Fprintf(m.Stderr, "custody ledger check-receipt: %v\n", err)
		return exitUsage
	}
	raw, err := m.readBody(file)
	if err != nil {
		fmt.Fprintf(m.Stderr, "custody ledger check-receipt: %v\n", err)
		return exitUsage
	}
	r, err := parseReceipt(raw)
	if err != nil {
		fmt.Fprintf(m.Stderr, "custody ledger check-receipt: %s: %v\n", file, err)
		return exitUsage
	}
	cp, err := verifyReceipt(r, keys, *origin)
	if err != nil {
		fmt.Fprintf(m.Stderr, "custody ledger check-receipt: %s: FAILED: %v\n", file, err)
		return exitFailed
	}
	fmt.Fprintf(m.Stdout, "ok: entry %d (%s) is in checkpoint %d of %s, root %x\n", r.Seq, r.Hash, cp.Size, cp.Origin, cp.Root)
	return exitOK
}

// verifyReceipt verifies r against the ledger's keys: the checkpoint it
// cites was signed by one of them (the key in force when it was signed).
func verifyReceipt(r tlog.Receipt, keys []ed25519.PublicKey, origin string) (tlog.Checkpoint, error) {
	err := errors.New("no public key given")
	for _, k := range keys {
		var cp tlog.Checkpoint
		if cp, err = r.Verify(k, origin); err == nil {
			return cp, nil
		}
	}
	return tlog.Checkpoint{}, err
}

// splitFirstArg takes a leading positional argument off args, so that
// RECEIPT may come before the flags.
func splitFirstArg(args []string) (string, []string) {
	if len(args) > 0 && (!strings.HasPrefix(args[0], "-") || args[0] == "-") {
		return args[0], args[1:]
	}
	return "", args
}

// parseReceipt reads a receipt, or a call's result carrying one as its
// "inclusion" member.
func parseReceipt(raw []byte) (tlog.Receipt, error) {
	var wrapped struct {
		Inclusion *tlog.Receipt `json:"inclusion"`
	}
	if err := json.Unmarshal(raw, &wrapped); err == nil && wrapped.Inclusion != nil {
		return *wrapped.Inclusion, nil
	}
	var r tlog.Receipt
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("not a receipt: %w", err)
	}
	if r.Checkpoint == "" {
		return r, errors.New("not a receipt: no checkpoint (a call's result without ?proof=1, or not yet covered?)")
	}
	return r, nil
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
