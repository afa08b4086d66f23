package sqlite

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
)

// A ledger knows itself. Its id is random, made with the ledger, kept in
// the database (meta.ledger_id), named in every checkpoint and in the
// data directory's key material (ledger.id, beside signing.key). The data
// directory also keeps, outside the database, a record of the last
// checkpoint it signed (last-checkpoint.json, written atomically, mode
// 0600). Open refuses a store
//
//   - whose id is not the data directory's (the database was replaced,
//     or is another ledger's), or that is missing while ledger.id names
//     one;
//   - that holds fewer entries than the last checkpoint this directory
//     signed, whose entry at that size has another hash, or that lost
//     that checkpoint (a restore from an older backup, a truncation, a
//     rewrite);
//   - whose entries since its last checkpoint do not chain onto it, or
//     whose last checkpoint is not signed by this directory's key;
//   - with entries after its last checkpoint that this directory's writer
//     cannot vouch for (see below), unless told to accept them.
//
// # The unsealed tail
//
// Entries appended after the last checkpoint are covered by no signature.
// A forged entry, chained correctly, appended there by anyone who can
// write the file, is indistinguishable from a real one by its contents; a
// checkpoint signed over it would launder it. So every commit that
// appends also stores, in the same transaction, the head it leaves with
// an HMAC under a key derived from the signing key (meta.tail). It costs
// no fsync of its own and, being in the same transaction, names the
// durable head after any crash (SIGKILL or power loss). At open, a tail
// whose head the HMAC does not vouch for was not written by a holder of
// this directory's key: the store refuses to open for writing, naming the
// entries, until an operator who has looked at them runs
// `custody ledger seal --accept-tail`, which records the acceptance on the
// ledger and signs a checkpoint over it. A running writer that finds
// another process appended refuses to build on entries it cannot vouch
// for in the same way. A store written before ledgers had ids is vouched
// for once, when it is given its id.

// Files of the data directory's identity.
const (
	ledgerIDFile = "ledger.id"
	recordFile   = "last-checkpoint.json"
)

// Kinds of the entries the store appends on its own.
const (
	// KindTailAccepted records that an operator accepted entries that
	// were appended after the last checkpoint by a writer this data
	// directory could not vouch for.
	KindTailAccepted = "ledger.tail.accepted"
)

func newLedgerID() string {
	var b [ledger.LedgerIDLen / 2]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// tailSeal writes and checks the writer's word on the head (meta.tail).
type tailSeal struct {
	ledger string
	key    []byte // HMAC key derived from the signing key
	stmt   *sql.Stmt
	buf    []byte
}

func tailKey(priv ed25519.PrivateKey) []byte {
	h := sha256.New()
	h.Write([]byte("custody-tail-seal/v1\n"))
	h.Write(priv.Seed())
	return h.Sum(nil)
}

const upsertTail = `INSERT INTO meta (key, value) VALUES ('tail', ?)
	ON CONFLICT (key) DO UPDATE SET value = excluded.value`

// value returns meta.tail for head: "<seq> <hash> <hmac>".
func (t *tailSeal) value(head custody.Receipt) []byte {
	m := hmac.New(sha256.New, t.key)
	b := append(t.buf[:0], t.ledger...)
	b = append(b, '\n')
	b = strconv.AppendInt(b, head.Seq, 10)
	b = append(b, ' ')
	b = append(b, head.Hash...)
	m.Write(b)
	b = append(b, ' ')
	t.buf = hex.AppendEncode(b, m.Sum(nil))
	return t.buf[len(t.ledger)+1:]
}

func prepareTail(ctx context.Context, conn *sql.DB) (*tailSeal, error) {
	stmt, err := conn.PrepareContext(ctx, upsertTail)
	if err != nil {
		return nil, fmt.Errorf("prepare the tail seal: %w", err)
	}
	return &tailSeal{stmt: stmt}, nil
}

// write stores head as the tail in tx.
func (t *tailSeal) write(ctx context.Context, tx *sql.Tx, head custody.Receipt) error {
	if _, err := tx.StmtContext(ctx, t.stmt).ExecContext(ctx, string(t.value(head))); err != nil {
		return fmt.Errorf("write the tail seal: %w", err)
	}
	return nil
}

// vouches reports whether the stored tail names head under this key.
func (t *tailSeal) vouches(ctx context.Context, q querier, head custody.Receipt) (bool, error) {
	stored, err := metaValue(ctx, q, "tail")
	if err != nil || stored == "" {
		return false, err
	}
	return hmac.Equal([]byte(stored), t.value(head)), nil
}

// headVouched reads the ledger's head and the tail seal in one statement,
// so in one snapshot, and reports whether the seal vouches for the head.
func (t *tailSeal) headVouched(ctx context.Context, q querier) (custody.Receipt, bool, error) {
	const sel = `SELECT coalesce((SELECT seq FROM entries ORDER BY seq DESC LIMIT 1), 0),
		coalesce((SELECT hash FROM entries ORDER BY seq DESC LIMIT 1), ''),
		coalesce((SELECT value FROM meta WHERE key = 'tail'), '')`
	var head custody.Receipt
	var stored string
	if err := q.QueryRowContext(ctx, sel).Scan(&head.Seq, (*digest)(&head.Hash), &stored); err != nil {
		return head, false, fmt.Errorf("read head: %w", err)
	}
	return head, stored != "" && hmac.Equal([]byte(stored), t.value(head)), nil
}

func metaValue(ctx context.Context, q querier, key string) (string, error) {
	var v string
	err := q.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read meta %s: %w", key, err)
	}
	return v, nil
}

// ensureLedgerID returns the store's ledger id, giving one to a store
// that has none: a new store, or one written before ledgers had ids,
// whose head is then vouched for as this directory's. The id is durable
// before it returns, since ledger.id will name it.
func ensureLedgerID(ctx context.Context, conn *sql.DB, t *tailSeal, head custody.Receipt, sync func() error) (string, error) {
	id, err := metaValue(ctx, conn, "ledger_id")
	if err != nil || id != "" {
		return id, err
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return "", fmt.Errorf("give the ledger an id: %w", err)
	}
	defer tx.Rollback()
	// Under the write lock: another process opening the same new store
	// may have given it its id meanwhile, or appended.
	if id, err := metaValue(ctx, tx, "ledger_id"); err != nil || id != "" {
		return id, err
	}
	if head, err = readHead(ctx, tx); err != nil {
		return "", err
	}
	t.ledger = newLedgerID()
	if _, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('ledger_id', ?)`, t.ledger); err != nil {
		return "", fmt.Errorf("give the ledger an id: %w", err)
	}
	if head.Seq > 0 && t.key != nil {
		if _, err := tx.ExecContext(ctx, upsertTail, string(t.value(head))); err != nil {
			return "", fmt.Errorf("give the ledger an id: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return "", fmt.Errorf("give the ledger an id: %w", err)
	}
	if err := sync(); err != nil {
		return "", fmt.Errorf("give the ledger an id: %w", err)
	}
	return t.ledger, nil
}

// refuse returns the error of a store that will not open.
func refuse(dir, format string, args ...any) error {
	return custody.Errorf(custody.EUNAVAILABLE, "refusing to open the store in %s: "+format, append([]any{dir}, args...)...)
}

// readDirLedgerID returns the id in dir's ledger.id, "" when absent.
func readDirLedgerID(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, ledgerIDFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", ledgerIDFile, err)
	}
	id := strings.TrimSpace(string(b))
	if err := ledger.CheckLedgerID(id); err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Join(dir, ledgerIDFile), err)
	}
	return id, nil
}

// checkDirLedgerID compares the store's ledger id with dir's, writing
// dir's when it has none yet.
func checkDirLedgerID(dir, dirID, storeID string) error {
	switch {
	case dirID == "":
		return writeFileAtomic(dir, ledgerIDFile, []byte(storeID+"\n"))
	case dirID != storeID:
		return refuse(dir, "%s is ledger %s, but this data directory's %s names ledger %s: the database was replaced "+
			"by another ledger's; put the right %s back, or use another data directory",
			DatabaseFile, storeID, ledgerIDFile, dirID, DatabaseFile)
	}
	return nil
}

// dirRecord is the data directory's record of the last checkpoint it
// signed.
type dirRecord struct {
	Ledger string `json:"ledger"`
	Size   int64  `json:"size"`
	Head   string `json:"head"`
	At     string `json:"at"`
}

func readRecord(dir string) (*dirRecord, error) {
	b, err := os.ReadFile(filepath.Join(dir, recordFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", recordFile, err)
	}
	var r dirRecord
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, recordFile), err)
	}
	return &r, nil
}

// writeRecord records cp as the last checkpoint dir signed, unless the
// record already names a later one of the same ledger (another process
// sharing the directory signed it).
func writeRecord(dir string, cp custody.Checkpoint) error {
	if old, err := readRecord(dir); err == nil && old != nil && old.Ledger == cp.Ledger && old.Size >= cp.Size {
		return nil
	}
	b, _ := json.Marshal(dirRecord{Ledger: cp.Ledger, Size: cp.Size, Head: cp.Head, At: cp.At})
	return writeFileAtomic(dir, recordFile, append(b, '\n'))
}

// writeFileAtomic replaces dir/name with data (mode 0600), durably.
func writeFileAtomic(dir, name string, data []byte) error {
	tmp, err := writeTemp(dir, name, data)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("install %s: %w", name, err)
	}
	return syncDir(dir)
}

// checkRecord refuses a store that went backwards against the last
// checkpoint this data directory signed.
func checkRecord(ctx context.Context, q querier, dir, id string, head custody.Receipt, last custody.Checkpoint) error {
	rec, err := readRecord(dir)
	if err != nil || rec == nil {
		return err
	}
	at := fmt.Sprintf("this data directory last signed a checkpoint of ledger %s at size %d (%s, %s)", rec.Ledger, rec.Size, rec.At, recordFile)
	switch {
	case rec.Ledger != id:
		return refuse(dir, "%s is ledger %s, but %s: the database was replaced", DatabaseFile, id, at)
	case head.Seq < rec.Size:
		return refuse(dir, "the ledger holds %d entries, but %s: entries were removed (a restore from an older backup, or a truncation)", head.Seq, at)
	case last.Size < rec.Size:
		return refuse(dir, "the store's last checkpoint is at size %d, but %s: checkpoints were removed", last.Size, at)
	}
	var hash digest
	if err := q.QueryRowContext(ctx, `SELECT hash FROM entries WHERE seq = ?`, rec.Size).Scan(&hash); err != nil {
		return fmt.Errorf("read the entry at seq %d: %w", rec.Size, err)
	}
	if string(hash) != rec.Head {
		return refuse(dir, "the entry at seq %d has hash %s, but %s with head %s: the ledger was rewritten", rec.Size, hash, at, rec.Head)
	}
	return nil
}

// recorder writes the record of the checkpoints a store signs once they
// are durable, off the writer's path: the latest waiting one wins.
type recorder struct {
	dir  string
	log  *slog.Logger
	next chan custody.Checkpoint
	done chan struct{}
}

func newRecorder(dir string, log *slog.Logger) *recorder {
	r := &recorder{dir: dir, log: log, next: make(chan custody.Checkpoint, 1), done: make(chan struct{})}
	go r.run()
	return r
}

func (r *recorder) run() {
	defer close(r.done)
	for cp := range r.next {
		if err := writeRecord(r.dir, cp); err != nil {
			r.log.Error("cannot record the last checkpoint signed", "err", err)
		}
	}
}

// note queues cp, replacing one still waiting. Only the syncer calls it.
func (r *recorder) note(cp custody.Checkpoint) {
	for {
		select {
		case r.next <- cp:
			return
		default:
			select {
			case <-r.next:
			default:
			}
		}
	}
}

// close writes what is waiting and stops.
func (r *recorder) close() {
	close(r.next)
	<-r.done
}
