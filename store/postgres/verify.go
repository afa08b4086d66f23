package postgres

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
)

// Verify checks the whole chain and every stored checkpoint (signature and
// head) in one consistent snapshot, in memory that does not grow with the
// ledger. When the ledger was changed it returns
// a *ledger.VerifyError naming the first bad seq and the reason; a failure
// to read the store is EUNAVAILABLE.
func (db *DB) Verify(ctx context.Context) (ledger.Report, error) {
	return db.VerifyWith(ctx, db.pub)
}

// VerifyWith is Verify with checkpoint signatures checked against pub, a
// key obtained elsewhere; a nil pub checks checkpoints against the entries
// only.
func (db *DB) VerifyWith(ctx context.Context, pub ed25519.PublicKey) (ledger.Report, error) {
	var keys []ed25519.PublicKey
	if pub != nil {
		keys = append(keys, pub)
	}
	// The walk gives each checkpoint right after the entry it covers: the
	// verifier need keep no hashes, and its memory does not grow with the
	// ledger.
	p := ledger.NewPager(ledger.NewStreamVerifier(keys...))
	if err := db.walk(ctx, p.Entry, p.Checkpoint); err != nil {
		return ledger.Report{}, err
	}
	return p.Finish()
}

// ExportJSONL writes the ledger as JSONL, one entry a line in seq order,
// each checkpoint on its own line right after the entry it covers, as the
// SQLite store does. The output verifies offline with ledger.VerifyJSONL
// and the public key.
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
		return write()
	}
	return db.walk(ctx, entry, checkpoint)
}

// walk calls entry for every entry in seq order, and checkpoint for every
// checkpoint right after the entry it covers (checkpoints beyond the last
// entry come at the end), all from one repeatable-read snapshot, while the
// other instances go on appending.
func (db *DB) walk(ctx context.Context, entry func(*custody.Entry) error, checkpoint func(custody.Checkpoint) error) error {
	tx, err := db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return unavailable("read ledger", err)
	}
	defer tx.Rollback(context.Background())
	cps, err := readCheckpoints(ctx, tx)
	if err != nil {
		return unavailable("read checkpoints", err)
	}
	rows, err := tx.Query(ctx, `SELECT `+entryColumns+` FROM entries ORDER BY seq`)
	if err != nil {
		return unavailable("read ledger", err)
	}
	defer rows.Close()
	next := 0
	for rows.Next() {
		e, err := scanEntry(rows)
		if err == nil {
			err = entry(&e)
		}
		for ; err == nil && next < len(cps) && cps[next].Size <= e.Seq; next++ {
			err = checkpoint(cps[next])
		}
		if err != nil {
			return walkError(err)
		}
	}
	if err := rows.Err(); err != nil {
		return unavailable("read ledger", err)
	}
	for _, cp := range cps[next:] {
		if err := checkpoint(cp); err != nil {
			return walkError(err)
		}
	}
	return nil
}

func walkError(err error) error {
	var ve *ledger.VerifyError
	if errors.As(err, &ve) {
		return ve
	}
	return unavailable("read ledger", err)
}
