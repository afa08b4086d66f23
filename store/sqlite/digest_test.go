package sqlite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
)

// hexLayout rewrites the entries table as schema version 4 kept it: the
// digests as hex text and each entry's prev stored, computed here from the
// row before. Version 5 is forgotten, so that the next Open migrates the
// table again.
const hexLayout = `DROP TRIGGER entries_no_update; DROP TRIGGER entries_no_delete;
CREATE TABLE entries_hex (
	seq INTEGER PRIMARY KEY, at TEXT NOT NULL, kind TEXT NOT NULL, trace TEXT NOT NULL,
	actor TEXT NOT NULL, refs TEXT NOT NULL, body BLOB NOT NULL,
	body_sha256 TEXT NOT NULL, prev TEXT NOT NULL, hash TEXT NOT NULL);
INSERT INTO entries_hex SELECT seq, at, kind, trace, actor, refs, body, lower(hex(body_sha256)),
	lower(hex(coalesce(lag(hash) OVER (ORDER BY seq), zeroblob(32)))), lower(hex(hash)) FROM entries;
DROP TABLE entries;
ALTER TABLE entries_hex RENAME TO entries;
CREATE TRIGGER entries_no_update BEFORE UPDATE ON entries
BEGIN SELECT RAISE(ABORT, 'ledger entries are append-only'); END;
CREATE TRIGGER entries_no_delete BEFORE DELETE ON entries
BEGIN SELECT RAISE(ABORT, 'ledger entries are append-only'); END;
` + undoUpstreamTokens + `;
` + undoRequester + `;
DELETE FROM schema_migrations WHERE version >= 5`

// undoRequester takes back schema version 6 (the approvals' requester
// key), for a test that makes a store of an earlier version: the
// migrations after the one it forgets run again.
const undoRequester = `DROP INDEX approvals_requester_digest; DROP INDEX approvals_requester_requested_digest;
ALTER TABLE approvals DROP COLUMN requester`

// fillMixed appends n entries of two kinds and closes the store, which
// signs a checkpoint over them, and returns the entries as read back and
// the export.
func fillMixed(t *testing.T, dir string, n int) ([]custody.Entry, []byte) {
	t.Helper()
	db := openDir(t, dir, Options{CheckpointEvery: 4})
	for i := 1; i <= n; i++ {
		mustAppend(t, db, entry(fmt.Sprint("k", i%2), "t", map[string]string{"i": fmt.Sprint(i)}, i))
	}
	db.Close()
	db = openDir(t, dir, Options{ReadOnly: true})
	es, err := db.Entries(context.Background(), custody.Query{})
	if err != nil {
		t.Fatal(err)
	}
	var export bytes.Buffer
	if err := db.ExportJSONL(context.Background(), &export); err != nil {
		t.Fatal(err)
	}
	db.Close()
	return es, export.Bytes()
}

// TestEntryDigestsMigrated: a data directory whose entries keep hex
// digests and a stored prev opens, is converted to 32-byte digests with
// prev derived, and reads back, exports and verifies exactly as before,
// with the append-only guards in place.
func TestEntryDigestsMigrated(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	before, export := fillMixed(t, dir, 10)
	rawExec(t, dir, hexLayout)
	raw := openRaw(t, dir)
	for _, e := range before {
		var sum, prev, hash string
		err := raw.QueryRow(`SELECT body_sha256, prev, hash FROM entries WHERE seq = ?`, e.Seq).Scan(&sum, &prev, &hash)
		if err != nil || sum != e.BodySHA256 || prev != e.Prev || hash != e.Hash {
			t.Fatalf("the hex layout of seq %d: %s %s %s, %v; want %s %s %s", e.Seq, sum, prev, hash, err, e.BodySHA256, e.Prev, e.Hash)
		}
	}
	raw.Close()

	db := openDir(t, dir, Options{CheckpointEvery: 4})
	after, err := db.Entries(ctx, custody.Query{})
	if err != nil || !reflect.DeepEqual(after, before) {
		t.Fatalf("entries after the migration differ: %v\n got %+v\nwant %+v", err, after, before)
	}
	var got bytes.Buffer
	if err := db.ExportJSONL(ctx, &got); err != nil || !bytes.Equal(got.Bytes(), export) {
		t.Fatalf("export after the migration differs: %v\n got %s\nwant %s", err, got.Bytes(), export)
	}
	if r, err := db.Verify(ctx); err != nil || r.Strict() != nil {
		t.Fatalf("Verify after the migration: %+v, %v", r, err)
	}
	next := mustAppend(t, db, entry("k", "t", nil, 11))
	if next.Prev != before[9].Hash {
		t.Fatalf("the entry appended after the migration has prev %s, want %s", next.Prev, before[9].Hash)
	}
	if _, err := db.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if r, err := db.Verify(ctx); err != nil || r.Strict() != nil {
		t.Fatalf("Verify after an append: %+v, %v", r, err)
	}
	var types string
	if err := db.rdb.QueryRow(`SELECT group_concat(DISTINCT typeof(body_sha256) || typeof(hash) || length(hash)) FROM entries`).Scan(&types); err != nil || types != "blobblob32" {
		t.Fatalf("stored digests: %q, %v; want 32-byte blobs", types, err)
	}
	if err := rawExecErr(dir, `UPDATE entries SET kind = 'x'`); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Fatalf("UPDATE after the migration: %v, want append-only", err)
	}
	if err := rawExecErr(dir, `DELETE FROM entries`); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Fatalf("DELETE after the migration: %v, want append-only", err)
	}
}

// TestEntryDigestsMigrationKeepsTampering: what verification found in
// the hex layout it still finds after the migration, at the same seq.
func TestEntryDigestsMigrationKeepsTampering(t *testing.T) {
	tests := []struct {
		name    string
		sql     func(es []custody.Entry) string
		seq     int64
		because string
	}{
		{"HashUppercase", func([]custody.Entry) string { return `UPDATE entries SET hash = upper(hash) WHERE seq = 3` }, 3, "hash does not match"},
		{"HashNotHex", func([]custody.Entry) string { return `UPDATE entries SET hash = 'nope' WHERE seq = 5` }, 5, "hash does not match"},
		{"DigestNotHex", func([]custody.Entry) string { return `UPDATE entries SET body_sha256 = 'nope' WHERE seq = 2` }, 2, "body_sha256"},
		{"PrevResealed", func(es []custody.Entry) string {
			// prev rewritten and the hash made to match it: the entry
			// no longer follows the one before.
			e := es[3]
			if err := new(ledger.Sealer).Seal(strings.Repeat("ab", 32), &e); err != nil {
				t.Fatal(err)
			}
			return fmt.Sprintf(`UPDATE entries SET prev = '%s', hash = '%s' WHERE seq = 4`, e.Prev, e.Hash)
		}, 4, "hash does not match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			es, _ := fillMixed(t, dir, 10)
			rawExec(t, dir, hexLayout, dropGuards, tt.sql(es))
			db := openDir(t, dir, Options{ReadOnly: true})
			_, err := db.Verify(context.Background())
			var ve *ledger.VerifyError
			if !errors.As(err, &ve) || ve.Seq != tt.seq || !strings.Contains(ve.Reason, tt.because) {
				t.Fatalf("Verify after the migration: %v; want seq %d and %q", err, tt.seq, tt.because)
			}
		})
	}
}

// TestEntriesPrev: entries read out of seq order get the hash of the
// entry before them as prev, and an entry whose predecessor was removed
// is reported rather than given a prev.
func TestEntriesPrev(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	all, _ := fillMixed(t, dir, 10)
	db := openDir(t, dir, Options{ReadOnly: true})
	odd, err := db.Entries(ctx, custody.Query{Kind: "k1", After: 2})
	if err != nil || len(odd) != 4 {
		t.Fatalf("Entries of kind k1: %d, %v; want 4", len(odd), err)
	}
	for _, e := range odd {
		if !reflect.DeepEqual(e, all[e.Seq-1]) {
			t.Fatalf("entry %d read by kind = %+v, want %+v", e.Seq, e, all[e.Seq-1])
		}
	}
	db.Close()

	rawExec(t, dir, dropGuards, `DELETE FROM entries WHERE seq = 4`)
	db = openDir(t, dir, Options{ReadOnly: true})
	_, err = db.Entries(ctx, custody.Query{After: 4})
	var ve *ledger.VerifyError
	if !errors.As(err, &ve) || ve.Seq != 4 || !strings.Contains(ve.Reason, "missing") {
		t.Fatalf("Entries after a removed entry: %v; want seq 4 missing", err)
	}
	if es, err := db.Entries(ctx, custody.Query{Limit: 3}); err != nil || len(es) != 3 {
		t.Fatalf("Entries before the removed entry: %d, %v", len(es), err)
	}
}

// TestOpenRefusesMissingBeforeCheckpoint: the tail check takes the prev
// of the entry the last checkpoint covers from the entry before it, and
// refuses a store where that entry was removed.
func TestOpenRefusesMissingBeforeCheckpoint(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, 6) // checkpoints at 4 and 6
	rawExec(t, dir, dropGuards, `DELETE FROM entries WHERE seq = 5`)
	wantRefused(t, dir, Options{}, "since the last checkpoint", "seq 5", "missing")
}

func TestAppendDigest(t *testing.T) {
	good := strings.Repeat("0f", 32)
	tests := []struct {
		name, hex string
		ok        bool
	}{
		{"OK", good, true},
		{"ErrUppercase", strings.ToUpper(good), false},
		{"ErrShort", good[:62], false},
		{"ErrLong", good + "00", false},
		{"ErrNotHex", "zz" + good[2:], false},
		{"ErrEmpty", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := appendDigest([]byte{1}, "hash", tt.hex)
			if (err == nil) != tt.ok {
				t.Fatalf("appendDigest(%q): %v", tt.hex, err)
			}
			if want := []byte{1}; !tt.ok && !bytes.Equal(got, want) {
				t.Fatalf("a refused digest left %x", got)
			}
			if want := append([]byte{1}, bytes.Repeat([]byte{0x0f}, 32)...); tt.ok && !bytes.Equal(got, want) {
				t.Fatalf("appendDigest = %x, want %x", got, want)
			}
		})
	}
}
