package sqlite

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
)

// Verify checks the whole chain and every stored checkpoint (signature and
// head) in one consistent snapshot, against every key the data directory
// lists in signing.pub (see ledger.Verifier for the rule across a key
// rotation). When the ledger was changed it returns a *ledger.VerifyError
// naming the first bad seq and the reason; a failure to read the store is
// EUNAVAILABLE, naming the seq it reached. Its memory does not grow with
// the ledger.
func (db *DB) Verify(ctx context.Context) (ledger.Report, error) {
	return db.VerifyKeys(ctx, db.keys...)
}

// VerifyWith is Verify with checkpoint signatures checked against pub, a
// key obtained elsewhere, rather than the store's own: it detects a
// replaced signing key. A nil pub checks checkpoints against the entries
// only.
func (db *DB) VerifyWith(ctx context.Context, pub ed25519.PublicKey) (ledger.Report, error) {
	if pub == nil {
		return db.VerifyKeys(ctx)
	}
	return db.VerifyKeys(ctx, pub)
}

// VerifyKeys is Verify trusting keys, obtained elsewhere; none checks
// checkpoints against the entries only.
func (db *DB) VerifyKeys(ctx context.Context, keys ...ed25519.PublicKey) (ledger.Report, error) {
	p := ledger.NewPager(ledger.NewStreamVerifier(keys...))
	if err := db.walk(ctx, p.Entry, p.Checkpoint); err != nil {
		return ledger.Report{}, err
	}
	return p.Finish()
}

// ExportJSONL writes the ledger as JSONL, one entry a line in seq order,
// each checkpoint on its own line right after the entry it covers, followed
// by its signed note with the witnesses' cosignatures when it has one. The
// output verifies offline with ledger.VerifyJSONL and the public key, and
// its notes with tlog.NoteChecker.
func (db *DB) ExportJSONL(ctx context.Context, w io.Writer) error {
	var line []byte
	write := func() error {
		if _, err := w.Write(line); err != nil {
			return fmt.Errorf("export ledger: %w", err)
		}
		return nil
	}
	entry := func(e *custody.Entry) error {
		line = ledger.AppendEntryLine(line[:0], e)
		return write()
	}
	checkpoint := func(cp custody.Checkpoint) error {
		line = ledger.AppendCheckpointLine(line[:0], cp)
		// The note was committed with the checkpoint: it is there.
		n, ok, err := db.cosignedNote(ctx, uint64(cp.Size))
		if err != nil {
			return err
		}
		if ok {
			line = ledger.AppendNoteLine(line, n.Cosigned())
		}
		return write()
	}
	return db.walk(ctx, entry, checkpoint)
}

// walk calls entry for every entry in seq order, and checkpoint for every
// checkpoint right after the entry it covers (checkpoints beyond the last
// entry come at the end), all from one read transaction. The first error
// stops the walk and is returned: a *ledger.VerifyError as is, a storage
// failure as EUNAVAILABLE.
func (db *DB) walk(ctx context.Context, entry func(*custody.Entry) error, checkpoint func(custody.Checkpoint) error) error {
	tx, err := db.rdb.BeginTx(ctx, nil)
	if err != nil {
		return unavailable("read ledger", err)
	}
	defer tx.Rollback()
	cps, err := readCheckpoints(ctx, tx)
	if err != nil {
		return unavailable("read checkpoints", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+entryColumns+` FROM entries ORDER BY seq`)
	if err != nil {
		return unavailable("read ledger", err)
	}
	defer rows.Close()
	next, seq := 0, int64(1)
	c := chain{prev: ledger.GenesisPrev()}
	for rows.Next() {
		e, err := scanEntry(rows)
		if err == nil {
			seq = e.Seq + 1
			c.link(&e)
			err = entry(&e)
		}
		for ; err == nil && next < len(cps) && cps[next].Size <= e.Seq; next++ {
			err = checkpoint(cps[next])
		}
		if err != nil {
			return walkError(err, seq)
		}
	}
	if err := rows.Err(); err != nil {
		return walkError(err, seq)
	}
	for _, cp := range cps[next:] {
		if err := checkpoint(cp); err != nil {
			return walkError(err, seq)
		}
	}
	return nil
}

// walkError returns a *ledger.VerifyError as is, and a failure to read
// as EUNAVAILABLE naming the seq it reached: a corrupted page stops the
// read at the entries it holds.
func walkError(err error, seq int64) error {
	var ve *ledger.VerifyError
	if errors.As(err, &ve) {
		return ve
	}
	return unavailable(fmt.Sprintf("read ledger at seq %d", seq), err)
}
