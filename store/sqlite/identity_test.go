package sqlite

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
)

// fill opens a store in dir, appends n entries, and closes it, which
// signs a checkpoint over them.
func fill(t *testing.T, dir string, n int) {
	t.Helper()
	db, err := Open(context.Background(), dir, Options{CheckpointEvery: 4, CheckpointInterval: time.Hour})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	for i := range n {
		mustAppend(t, db, entry("k", "t", nil, i))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// wantRefused opens dir with opts and checks that Open refuses, saying
// every one of says.
func wantRefused(t *testing.T, dir string, opts Options, says ...string) {
	t.Helper()
	db, err := Open(context.Background(), dir, opts)
	if err == nil {
		db.Close()
		t.Fatalf("Open succeeded; want a refusal saying %q", says)
	}
	for _, s := range says {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("Open: %v; want it to say %q", err, s)
		}
	}
}

func removeDB(t *testing.T, dir string) {
	t.Helper()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(filepath.Join(dir, DatabaseFile+suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCheckpointsNameTheLedger: every checkpoint names the ledger id kept
// in the database and in the data directory, and its signature covers it.
func TestCheckpointsNameTheLedger(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, 6)
	id, err := readDirLedgerID(dir)
	if err != nil || ledger.CheckLedgerID(id) != nil {
		t.Fatalf("ledger.id = %q, %v", id, err)
	}
	db := openDir(t, dir, Options{ReadOnly: true})
	cps, err := db.Checkpoints(context.Background())
	if err != nil || len(cps) != 2 {
		t.Fatalf("checkpoints %v, %v; want 2", cps, err)
	}
	for _, cp := range cps {
		if cp.Ledger != id {
			t.Errorf("checkpoint at %d names ledger %q, want %q", cp.Size, cp.Ledger, id)
		}
		moved := cp
		moved.Ledger = strings.Repeat("0", ledger.LedgerIDLen)
		if ledger.VerifyCheckpoint(db.PublicKey(), moved) == nil {
			t.Errorf("checkpoint at %d verifies under another ledger id", cp.Size)
		}
	}
	rec, err := readRecord(dir)
	if err != nil || rec == nil || rec.Size != 6 || rec.Ledger != id || rec.Head != cps[1].Head {
		t.Fatalf("record %+v, %v; want size 6 of ledger %s", rec, err, id)
	}
	fi, err := os.Stat(filepath.Join(dir, recordFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("record mode %v, %v; want 0600", fi.Mode(), err)
	}
}

// TestOpenRefusesStoreGoneBackwards: a store replaced, restored from an
// older backup, truncated, rewritten or stripped of its last checkpoint
// refuses to open, saying what differs from the last checkpoint this data
// directory signed.
func TestOpenRefusesStoreGoneBackwards(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, dir, backup string)
		says   []string
	}{
		{"DatabaseRemoved", func(t *testing.T, dir, _ string) { removeDB(t, dir) },
			[]string{"custody.db is missing", "ledger.id names ledger"}},
		{"OtherLedger", func(t *testing.T, dir, _ string) {
			other := t.TempDir()
			fill(t, other, 3)
			removeDB(t, dir)
			copyFile(t, filepath.Join(other, DatabaseFile), filepath.Join(dir, DatabaseFile))
		}, []string{"the database was replaced by another ledger's"}},
		{"OlderBackup", func(t *testing.T, dir, backup string) {
			removeDB(t, dir)
			copyFile(t, filepath.Join(backup, DatabaseFile), filepath.Join(dir, DatabaseFile))
		}, []string{"the ledger holds 4 entries", "at size 8", "entries were removed"}},
		{"Truncated", func(t *testing.T, dir, _ string) {
			rawExec(t, dir, dropGuards, `DELETE FROM entries WHERE seq > 4`, `DELETE FROM checkpoints WHERE size > 4`)
		}, []string{"the ledger holds 4 entries", "entries were removed"}},
		{"CheckpointDropped", func(t *testing.T, dir, _ string) {
			rawExec(t, dir, `DELETE FROM checkpoints WHERE size = 8`)
		}, []string{"last checkpoint is at size 4", "checkpoints were removed"}},
		{"Rewritten", func(t *testing.T, dir, _ string) {
			rawExec(t, dir, `UPDATE checkpoints SET head = '`+strings.Repeat("ab", 32)+`' WHERE size = 8`)
			rawExec(t, dir, dropGuards, `UPDATE entries SET hash = X'`+strings.Repeat("ab", 32)+`' WHERE seq = 8`)
		}, []string{"the entry at seq 8 has hash abab", "the ledger was rewritten"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, backup := t.TempDir(), t.TempDir()
			fill(t, dir, 4)
			copyFile(t, filepath.Join(dir, DatabaseFile), filepath.Join(backup, DatabaseFile))
			db := openDir(t, dir, Options{CheckpointEvery: 4})
			for i := range 4 {
				mustAppend(t, db, entry("k", "t", nil, i))
			}
			db.Close()
			tt.change(t, dir, backup)
			wantRefused(t, dir, Options{}, tt.says...)
			wantRefused(t, dir, Options{ReadOnly: true}, tt.says...)
		})
	}
}

// forge appends, with raw SQL, an entry chained correctly onto the head,
// as anyone who can write the file but has no key could.
func forge(t *testing.T, dir string) custody.Entry {
	t.Helper()
	raw := openRaw(t, dir)
	var head custody.Receipt
	if err := raw.QueryRow(`SELECT seq, lower(hex(hash)) FROM entries ORDER BY seq DESC LIMIT 1`).Scan(&head.Seq, &head.Hash); err != nil {
		t.Fatal(err)
	}
	e := custody.Entry{Seq: head.Seq + 1, At: custody.FormatTime(time.Now()), Kind: custody.KindApprovalDecided,
		Actor: "operator:mallory", Refs: map[string]string{}, Body: []byte(`{"decision":"approved"}`)}
	if err := new(ledger.Sealer).Seal(head.Hash, &e); err != nil {
		t.Fatal(err)
	}
	_, err := raw.Exec(`INSERT INTO entries (`+entryColumns+`) VALUES (?, ?, ?, ?, ?, '{}', ?, unhex(?), unhex(?))`,
		e.Seq, e.At, e.Kind, e.Trace, e.Actor, []byte(e.Body), e.BodySHA256, e.Hash)
	if err != nil {
		t.Fatal(err)
	}
	raw.Close()
	return e
}

// TestOpenRefusesForgedTail: an entry appended after the last checkpoint
// by someone without the key, chained correctly, is not signed over: the
// store refuses to open for writing, naming it, until the tail is
// accepted, and the acceptance is on the ledger under a checkpoint.
func TestOpenRefusesForgedTail(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, 5)
	forged := forge(t, dir)
	wantRefused(t, dir, Options{}, "seq 6 to 6 were appended after the last checkpoint (size 5)", "seal --accept-tail")

	ro := openDir(t, dir, Options{ReadOnly: true})
	r, err := ro.Verify(context.Background())
	if err != nil || r.Strict() == nil {
		t.Fatalf("Verify of the forged store: %+v, %v; want it to pass but for an unsealed tail", r, err)
	}
	ro.Close()
	if cps := checkpointSizes(t, dir); cps[len(cps)-1] != 5 {
		t.Fatalf("a checkpoint was signed over the forged entry: %v", cps)
	}

	db := openDir(t, dir, Options{AcceptTail: true})
	es, err := db.Entries(context.Background(), custody.Query{After: forged.Seq})
	if err != nil || len(es) != 1 || es[0].Kind != KindTailAccepted || !strings.Contains(string(es[0].Body), `"from":6`) || !strings.Contains(string(es[0].Body), `"to":6`) {
		t.Fatalf("after accepting: %+v, %v; want one %s entry naming seq 6", es, err, KindTailAccepted)
	}
	r, err = db.Verify(context.Background())
	if err != nil || r.Strict() != nil || r.Entries != 7 {
		t.Fatalf("Verify after accepting: %+v, %v", r, err)
	}
	db.Close()
	openDir(t, dir, Options{}).Close()
}

// TestCrashedTailIsVouchedFor: entries a writer of this data directory
// committed after the last checkpoint, left unsealed by a crash, are its
// own: the store opens and seals them.
func TestCrashedTailIsVouchedFor(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, 4)
	db, err := Open(context.Background(), dir, Options{CheckpointEvery: 100, CheckpointInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		mustAppend(t, db, entry("k", "t", nil, i))
	}
	// A crash: no Close, so no final checkpoint. The test abandons this
	// store's goroutines, as a killed process would.
	db2 := openDir(t, dir, Options{})
	if _, err := db2.Checkpoint(context.Background()); err != nil {
		t.Fatalf("sealing the crashed tail: %v", err)
	}
	if cps := checkpointSizes(t, dir); cps[len(cps)-1] != 7 {
		t.Fatalf("checkpoints %v, want one at 7", cps)
	}
}

// TestWriterRefusesForgedHead: a running store that finds another
// process appended an entry it cannot vouch for does not build on it.
func TestWriterRefusesForgedHead(t *testing.T) {
	dir := t.TempDir()
	db := openDir(t, dir, Options{})
	mustAppend(t, db, entry("k", "t", nil, 1))
	forge(t, dir)
	_, err := db.Append(context.Background(), entry("k", "t", nil, 2))
	if kindOf(err) != custody.EUNAVAILABLE || !strings.Contains(err.Error(), "without this data directory's key") {
		t.Fatalf("Append over a forged head: %v", err)
	}
}

func checkpointSizes(t *testing.T, dir string) []int64 {
	t.Helper()
	rows, err := openRaw(t, dir).Query(`SELECT size FROM checkpoints ORDER BY size`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var n int64
		rows.Scan(&n)
		out = append(out, n)
	}
	return out
}

// TestOpenChecksTheTail: an entry after the last checkpoint that was
// changed, or a last checkpoint whose entry was, is refused at Open with
// its seq.
func TestOpenChecksTheTail(t *testing.T) {
	tests := []struct {
		name string
		sql  string
		says string
	}{
		{"TailEntry", `UPDATE entries SET body = CAST('{"i":99}' AS BLOB) WHERE seq = 7`, "since the last checkpoint: seq 7: body_sha256"},
		{"CheckpointedEntry", `UPDATE entries SET kind = 'x' WHERE seq = 4`, "since the last checkpoint: seq 4: hash does not match"},
		{"Cut", `DELETE FROM entries WHERE seq >= 4`, "seq 4: the last checkpoint covers 4 entries, but the ledger holds 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			fill(t, dir, 4)
			db, err := Open(context.Background(), dir, Options{CheckpointEvery: 100, CheckpointInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 4 {
				mustAppend(t, db, entry("k", "t", nil, i))
			}
			// No Close: entries 5 to 8 stay after the last checkpoint.
			rawExec(t, dir, dropGuards, tt.sql)
			os.Remove(filepath.Join(dir, recordFile)) // what the tail check finds, not the record
			wantRefused(t, dir, Options{}, tt.says)
		})
	}
}

// TestOpenRefusesCorruptedPages: pages that cannot be read in the tail
// refuse the store at Open, and Verify names the seq it reached.
func TestOpenRefusesCorruptedPages(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(context.Background(), dir, Options{CheckpointEvery: 1 << 20, CheckpointInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 3000)
	for i := range 200 {
		mustAppend(t, db, custody.Entry{Kind: "k", Body: []byte(fmt.Sprintf(`{"i":%d,"pad":%q}`, i, big))})
	}
	if _, err := db.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	db.Close()
	// Overwrite the pages in the middle of the file, among the entries.
	f, err := os.OpenFile(filepath.Join(dir, DatabaseFile), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	junk := []byte(strings.Repeat("\xff", 3*4096))
	if _, err := f.WriteAt(junk, fi.Size()/2/4096*4096); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ro := openDir(t, dir, Options{ReadOnly: true})
	_, err = ro.Verify(context.Background())
	var ve *ledger.VerifyError
	if err == nil || (!errors.As(err, &ve) && !strings.Contains(err.Error(), "at seq ")) {
		t.Fatalf("Verify of a corrupted store: %v; want the seq it reached", err)
	}
	t.Logf("Verify: %v", err)
	ro.Close()
	// Without a checkpoint the whole ledger is the tail Open checks.
	rawExec(t, dir, `DELETE FROM checkpoints`)
	os.Remove(filepath.Join(dir, recordFile))
	wantRefused(t, dir, Options{}, "seq ")
}

// TestOpenRefusesMissingKey: a ledger whose signing key is gone does not
// get a new one silently; signing.pub stays as it was.
func TestOpenRefusesMissingKey(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, 3)
	pub, _ := os.ReadFile(filepath.Join(dir, publicKeyFile))
	os.Remove(filepath.Join(dir, privateKeyFile))
	wantRefused(t, dir, Options{}, "signing.key is missing", "ledger holds 3 entries", "rotate-key")
	if _, err := os.Stat(filepath.Join(dir, privateKeyFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a refused Open created a signing key")
	}
	if now, _ := os.ReadFile(filepath.Join(dir, publicKeyFile)); string(now) != string(pub) {
		t.Fatal("a refused Open changed signing.pub")
	}
	ro := openDir(t, dir, Options{ReadOnly: true})
	if r, err := ro.Verify(context.Background()); err != nil || r.Strict() != nil {
		t.Fatalf("read-only Verify without the private key: %+v, %v", r, err)
	}
}

// TestRotateKey: a lost key is replaced by an explicit rotation, recorded
// on the ledger; the ledger verifies across it with both keys, and not
// with the old one alone.
func TestRotateKey(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, 5)
	oldKeys, _ := readPublicKeys(dir)
	os.Remove(filepath.Join(dir, privateKeyFile))
	old, new, err := RotateKey(dir, Options{})
	if err != nil {
		t.Fatalf("RotateKey: %v", err)
	}
	if !old.Equal(oldKeys[0]) || old.Equal(new) {
		t.Fatalf("RotateKey returned old %x new %x; signing.pub held %x", old, new, oldKeys[0])
	}
	db := openDir(t, dir, Options{})
	if !db.PublicKey().Equal(new) || len(db.PublicKeys()) != 2 {
		t.Fatalf("after rotation: key %x, keys %d", db.PublicKey(), len(db.PublicKeys()))
	}
	mustAppend(t, db, entry("k", "t", nil, 9))
	if _, err := db.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	r, err := db.Verify(context.Background())
	if err != nil || r.Rotations != 1 || r.Strict() != nil {
		t.Fatalf("Verify across the rotation: %+v, %v", r, err)
	}
	if _, err := db.VerifyKeys(context.Background(), old); err == nil || !strings.Contains(err.Error(), "not a trusted key") {
		t.Fatalf("Verify with the old key alone: %v; want the new key untrusted", err)
	}
	es, _ := db.Entries(context.Background(), custody.Query{After: 5, Limit: 1})
	if len(es) != 1 || es[0].Kind != ledger.KeyRotatedKind {
		t.Fatalf("entry after the last one before the rotation: %+v", es)
	}
	if _, err := os.Stat(filepath.Join(dir, nextKeyFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the staged key is left behind")
	}
}

// TestRotateKeyRefusesUnvouchedTail: without the old key, entries after
// the last checkpoint cannot be vouched for; the rotation names them
// only when told to accept them.
func TestRotateKeyRefusesUnvouchedTail(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, 4)
	db, err := Open(context.Background(), dir, Options{CheckpointEvery: 100, CheckpointInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, db, entry("k", "t", nil, 1))
	// a crash, then the key is lost
	os.Remove(filepath.Join(dir, privateKeyFile))
	if _, _, err := RotateKey(dir, Options{}); err == nil || !strings.Contains(err.Error(), "seq 5 to 5") {
		t.Fatalf("RotateKey over an unvouched tail: %v", err)
	}
	if _, _, err := RotateKey(dir, Options{AcceptTail: true}); err != nil {
		t.Fatalf("RotateKey --accept-tail: %v", err)
	}
	ro := openDir(t, dir, Options{ReadOnly: true})
	es, _ := ro.Entries(context.Background(), custody.Query{After: 5})
	if len(es) != 1 || !strings.Contains(string(es[0].Body), `"accepted_tail":{"from":5,"to":5}`) {
		t.Fatalf("rotation entry %+v; want it to name the accepted tail", es)
	}
	if r, err := ro.Verify(context.Background()); err != nil || r.Strict() != nil {
		t.Fatalf("Verify: %+v, %v", r, err)
	}
}

// TestFinishRotation: a rotation whose commit landed but whose key was
// not installed yet is finished by the next Open; one that did not land
// is undone.
func TestFinishRotation(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, 2)
	_, priv, _ := ed25519.GenerateKey(nil)
	if err := stageKey(dir, priv); err != nil {
		t.Fatal(err)
	}
	db := openDir(t, dir, Options{})
	if db.PublicKey().Equal(priv.Public().(ed25519.PublicKey)) {
		t.Fatal("a staged key the ledger does not name was installed")
	}
	if _, err := os.Stat(filepath.Join(dir, nextKeyFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a staged key the ledger does not name was left behind")
	}
	db.Close()

	// A rotation that committed, cut short before its key was installed.
	oldKey, _ := os.ReadFile(filepath.Join(dir, privateKeyFile))
	oldPub, _ := os.ReadFile(filepath.Join(dir, publicKeyFile))
	_, new, err := RotateKey(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, privateKeyFile), filepath.Join(dir, nextKeyFile)); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, privateKeyFile), oldKey, 0o600)
	os.WriteFile(filepath.Join(dir, publicKeyFile), oldPub, 0o644)
	db = openDir(t, dir, Options{})
	if !db.PublicKey().Equal(new) || len(db.PublicKeys()) != 2 {
		t.Fatalf("after finishing the rotation: key %x (want %x), %d keys", db.PublicKey(), new, len(db.PublicKeys()))
	}
}

// TestDataDirectoryModes: a new data directory is made 0700 and its files
// 0600; an existing ledger that others may read is refused, naming the
// fix.
func TestDataDirectoryModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	fill(t, dir, 2)
	openDir(t, dir, Options{}).Close() // leaves -wal and -shm behind only while open; check after
	fi, _ := os.Stat(dir)
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("data directory mode %#o, want 0700", fi.Mode().Perm())
	}
	db := openDir(t, dir, Options{})
	mustAppend(t, db, entry("k", "t", nil, 1))
	des, _ := os.ReadDir(dir)
	for _, de := range des {
		fi, _ := de.Info()
		want := os.FileMode(0o600)
		if de.Name() == publicKeyFile {
			want = 0o644
		}
		if fi.Mode().IsRegular() && fi.Mode().Perm() != want {
			t.Errorf("%s has mode %#o, want %#o", de.Name(), fi.Mode().Perm(), want)
		}
	}
	db.Close()

	os.Chmod(dir, 0o755)
	wantRefused(t, dir, Options{}, "has mode 0755", "chmod 700")
	os.Chmod(dir, 0o700)
	os.Chmod(filepath.Join(dir, DatabaseFile), 0o644)
	wantRefused(t, dir, Options{}, "custody.db (0644)", "chmod 600")
}

// TestCheckpointRefusesForgedHead: a running store asked for a
// checkpoint after another process appended an entry it cannot vouch
// for does not sign over it.
func TestCheckpointRefusesForgedHead(t *testing.T) {
	dir := t.TempDir()
	db := openDir(t, dir, Options{})
	mustAppend(t, db, entry("k", "t", nil, 1))
	if _, err := db.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	forge(t, dir)
	if _, err := db.Checkpoint(context.Background()); err == nil || !strings.Contains(err.Error(), "refusing to sign over seq 2") {
		t.Fatalf("Checkpoint over a forged head: %v", err)
	}
	if cps := checkpointSizes(t, dir); cps[len(cps)-1] != 1 {
		t.Fatalf("checkpoints %v: one was signed over the forged entry", cps)
	}
}

// TestOpenGivesOldLedgerAnID: a store written before ledgers had ids
// (schema version 1, checkpoints signed without an id, an unsealed tail)
// is given an id when opened, keeps its old checkpoints verifiable, and
// signs new ones with the id.
func TestOpenGivesOldLedgerAnID(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, 6)
	priv, err := readPrivateKey(filepath.Join(dir, privateKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	// Back to what custody wrote before: version 1 checkpoints, no meta,
	// no ledger column, no identity files; and two entries after the last
	// checkpoint, as a crash would leave them.
	raw := openRaw(t, dir)
	var sizes []int64
	rows, err := raw.Query(`SELECT size FROM checkpoints`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n int64
		rows.Scan(&n)
		sizes = append(sizes, n)
	}
	rows.Close()
	for _, n := range sizes {
		var head, at string
		if err := raw.QueryRow(`SELECT head, at FROM checkpoints WHERE size = ?`, n).Scan(&head, &at); err != nil {
			t.Fatal(err)
		}
		sig := base64.StdEncoding.EncodeToString(ed25519.Sign(priv, ledger.CheckpointMessage(n, head, at)))
		if _, err := raw.Exec(`UPDATE checkpoints SET sig = ? WHERE size = ?`, sig, n); err != nil {
			t.Fatal(err)
		}
	}
	raw.Close()
	rawExec(t, dir, `DELETE FROM checkpoints WHERE size = 6`, `DROP TABLE meta`,
		`ALTER TABLE checkpoints DROP COLUMN ledger`, `DROP TABLE tlog_cosignatures`, `DROP TABLE tlog_checkpoints`,
		`DROP TABLE tlog_nodes`, undoUpstreamTokens, undoRequester, `DELETE FROM schema_migrations WHERE version >= 3`)
	os.Remove(filepath.Join(dir, ledgerIDFile))
	os.Remove(filepath.Join(dir, recordFile))

	db := openDir(t, dir, Options{})
	id, _ := readDirLedgerID(dir)
	if ledger.CheckLedgerID(id) != nil {
		t.Fatalf("ledger.id after the upgrade: %q", id)
	}
	mustAppend(t, db, entry("k", "t", nil, 7))
	cp, err := db.Checkpoint(context.Background())
	if err != nil || cp.Ledger != id || cp.Size != 7 {
		t.Fatalf("checkpoint after the upgrade: %+v, %v", cp, err)
	}
	r, err := db.Verify(context.Background())
	if err != nil || r.Strict() != nil || r.Ledger != id || r.Checkpoints != 2 {
		t.Fatalf("Verify of old and new checkpoints: %+v, %v", r, err)
	}
}
