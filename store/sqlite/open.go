package sqlite

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
)

// createFiles creates the database files with mode 0600 before SQLite
// does, refusing to create an empty ledger where this data directory
// kept one.
func createFiles(dir, dirID string) error {
	path := filepath.Join(dir, DatabaseFile)
	if _, err := os.Stat(path); dirID != "" && errors.Is(err, fs.ErrNotExist) {
		return refuse(dir, "%s is missing, but this data directory's %s names ledger %s: the database was removed. "+
			"Restore it from a backup; to start a new ledger instead, use another data directory",
			DatabaseFile, ledgerIDFile, dirID)
	}
	return createPrivate(path)
}

// establish settles the signing key and the ledger's identity of a store
// just opened, and checks it against its data directory.
func (db *DB) establish(ctx context.Context, dirID string, rotating bool) error {
	w := db.w
	if err := db.settleKey(rotating); err != nil {
		return err
	}
	// The writer commits without syncing (the syncer does); its syncer
	// is not running yet, so the id is synced here.
	id, err := ensureLedgerID(ctx, w.conn, w.tail, w.head, w.sync.sync)
	if err != nil {
		return err
	}
	w.tail.ledger = id
	if db.opts.Origin == "" {
		// Witnesses follow the ledger by its origin: its id, which
		// outlives any one signing key.
		db.opts.Origin = "custody/ledger/" + id
	}
	w.opts.Origin = db.opts.Origin
	if err := checkDirLedgerID(db.dir, dirID, id); err != nil {
		return err
	}
	if err := checkRecord(ctx, w.conn, db.dir, id, w.head, w.last); err != nil {
		return err
	}
	if db.opts.ReadOnly {
		w.pendingSince = time.Time{} // a reader signs nothing
		return nil
	}
	if err := db.checkTail(ctx); err != nil {
		return err
	}
	if err := db.vouchTail(ctx); err != nil {
		return err
	}
	w.record = newRecorder(db.dir, db.opts.Logger)
	return nil
}

// settleKey gives the store its signing key: the data directory's, a new
// one for a new ledger, none for a store opened read-only or for a
// rotation. A ledger with entries whose key is missing is refused: a new
// key would sign over it silently, and its old checkpoints would no
// longer verify against signing.pub.
func (db *DB) settleKey(rotating bool) error {
	w := db.w
	if !db.opts.ReadOnly {
		if err := finishRotation(db.dir, w.last); err != nil {
			return fmt.Errorf("finish a key rotation: %w", err)
		}
		if rotated, err := readKeyIfAny(db.dir); err != nil || rotated != nil {
			db.priv = rotated
			if err != nil {
				return err
			}
		}
	}
	empty := w.head.Seq == 0 && w.last.Size == 0
	if db.priv == nil && empty && !db.opts.ReadOnly && !rotating {
		priv, err := createPrivateKey(db.dir)
		if err != nil {
			return err
		}
		db.priv = priv
	}
	if db.priv != nil {
		db.pub = db.priv.Public().(ed25519.PublicKey)
		w.priv, w.tail.key = db.priv, tailKey(db.priv)
		if db.opts.ReadOnly {
			keys, err := readPublicKeys(db.dir)
			db.keys = keys
			if err != nil || len(keys) == 0 || !keys[len(keys)-1].Equal(db.pub) {
				db.keys = []ed25519.PublicKey{db.pub}
			}
			return nil
		}
		keys, err := exportPublicKeys(db.dir, db.pub)
		db.keys = keys
		return err
	}
	keys, err := readPublicKeys(db.dir)
	if err != nil {
		return err
	}
	if len(keys) > 0 {
		db.keys, db.pub = keys, keys[len(keys)-1]
	}
	if db.opts.ReadOnly || rotating {
		return nil
	}
	return refuse(db.dir, "%s is missing, but the ledger holds %d entries and its checkpoints up to size %d were signed with it. "+
		"Restore %s from a backup; if it is lost, `custody ledger rotate-key` starts a new key and records that on the ledger",
		privateKeyFile, w.head.Seq, w.last.Size, privateKeyFile)
}

// checkTail verifies the entries since the last checkpoint: that they
// chain onto it, and that this data directory's key signed it. It reads
// only the tail, so it takes as long on a million entries as on a
// thousand. A failure names the seq.
func (db *DB) checkTail(ctx context.Context) error {
	w := db.w
	v := ledger.NewStreamVerifier()
	if db.pub != nil {
		v = ledger.NewStreamVerifier(db.pub)
	}
	from, c := int64(1), chain{prev: ledger.GenesisPrev()}
	if last := w.last; last.Size > 0 {
		e := custody.Entry{Seq: last.Size}
		var prev digest
		err := w.conn.QueryRowContext(ctx, `SELECT `+prevColumn+` FROM entries WHERE seq = ?`, last.Size).Scan(&prev)
		if errors.Is(err, sql.ErrNoRows) {
			return refuse(db.dir, "seq %d: the last checkpoint covers %d entries, but the ledger holds %d: the tail was cut off",
				w.head.Seq+1, last.Size, w.head.Seq)
		}
		if err != nil {
			return refuse(db.dir, "seq %d: cannot read the entry the last checkpoint covers: %v", last.Size, err)
		}
		if err := prevOf(&e, prev); err != nil {
			return refuse(db.dir, "the ledger fails its check since the last checkpoint: %v", err)
		}
		if err := v.Resume(last.Size-1, e.Prev); err != nil {
			return refuse(db.dir, "seq %d: its prev %q is not a hash", last.Size, e.Prev)
		}
		if err := v.Checkpoint(last); err != nil {
			return refuse(db.dir, "the ledger fails its check since the last checkpoint: %v", err)
		}
		from, c.prev = last.Size, e.Prev
	}
	if err := verifyFrom(ctx, w.conn, v, from, c); err != nil {
		return refuse(db.dir, "the ledger fails its check since the last checkpoint: %v", err)
	}
	return nil
}

// verifyFrom hands v the entries from seq from on, a page at a time; c
// holds the prev of the entry at from.
func verifyFrom(ctx context.Context, q querier, v *ledger.Verifier, from int64, c chain) error {
	rows, err := q.QueryContext(ctx, `SELECT `+entryColumns+` FROM entries WHERE seq >= ? ORDER BY seq`, from)
	if err != nil {
		return fmt.Errorf("seq %d: cannot read: %w", from, err)
	}
	defer rows.Close()
	p := ledger.NewPager(v)
	next := from
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return walkError(err, next)
		}
		next = e.Seq + 1
		c.link(&e)
		if err := p.Entry(&e); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return walkError(err, next)
	}
	_, err = p.Finish()
	return err
}

// vouchTail refuses entries after the last checkpoint that the tail seal
// does not vouch for, unless Options.AcceptTail accepts them.
func (db *DB) vouchTail(ctx context.Context) error {
	w := db.w
	if w.head.Seq <= w.last.Size {
		return nil
	}
	ok := false
	if w.tail.key != nil {
		var err error
		if ok, err = w.tail.vouches(ctx, w.conn, w.head); err != nil {
			return err
		}
	}
	if ok {
		return nil
	}
	if db.opts.AcceptTail {
		db.unvouched = true
		w.pendingSince = time.Time{} // nothing signs them before the acceptance is recorded
		return nil
	}
	return refuse(db.dir, "seq %d to %d were appended after the last checkpoint (size %d) by a writer without this data "+
		"directory's signing key: no checkpoint will be signed over them. Look at them (`custody ledger show --after %d`); "+
		"if they are genuine, `custody ledger seal --accept-tail` records that on the ledger and signs them",
		w.last.Size+1, w.head.Seq, w.last.Size, w.last.Size)
}

// acceptTail records on the ledger that an operator accepted the entries
// after the last checkpoint, and signs a checkpoint over them and the
// record in one commit. A tail the writer vouches for is just sealed.
func (db *DB) acceptTail(ctx context.Context) error {
	if !db.unvouched {
		_, err := db.Checkpoint(ctx)
		if custody.ErrorKind(err) == custody.ENOTFOUND {
			return nil
		}
		return err
	}
	last, head := db.w.last, *db.head.Load()
	body, _ := json.Marshal(map[string]any{"from": last.Size + 1, "to": head.Seq, "head": head.Hash})
	e := custody.Entry{Kind: KindTailAccepted, Actor: "operator", Body: body}
	_, err := db.appendSealed(ctx, e)
	return err
}

// appendSealed appends e and a checkpoint covering it in one commit.
func (db *DB) appendSealed(ctx context.Context, e custody.Entry) (custody.Entry, error) {
	if e.At == "" {
		e.At = custody.FormatTime(db.opts.Now())
	}
	a := &appendReq{e: e}
	if err := a.prepare(); err != nil {
		return custody.Entry{}, err
	}
	r := &request{what: "append evidence", entry: &a.e, prepared: &a.p, checkpoint: true}
	resp, err := db.do(ctx, r)
	if err != nil {
		return custody.Entry{}, err
	}
	db.unvouched = false
	return resp.entry, nil
}
