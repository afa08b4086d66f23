package postgres

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
	"github.com/custody-dev/custody/store/postgres/pgtest"
)

// sixEntries opens a store on a new schema holding six entries with
// checkpoints at sizes 3 and 6, and returns it with its URL.
func sixEntries(t *testing.T) (*DB, string) {
	t.Helper()
	url := pgtest.URL(t)
	db := open(t, url, Options{CheckpointEvery: 3})
	appendN(t, db, 6, "t1")
	if n := pgtest.QueryInt(t, url, `SELECT count(*) FROM checkpoints`); n != 2 {
		t.Fatalf("%d checkpoints, want 2 (at 3 and 6)", n)
	}
	return db, url
}

// TestVerifyNamesFirstBadSeq edits the tables behind custody's back, each
// case on a ledger of its own: Verify names the first seq at fault, and
// the export of the same tables fails offline verification there too.
func TestVerifyNamesFirstBadSeq(t *testing.T) {
	for _, tc := range []struct {
		name string
		sql  string
		seq  int64
	}{
		{"Body", `UPDATE entries SET body = '{"n":2}' WHERE seq = 4`, 4},
		{"BodyDigest", `UPDATE entries SET body_sha256 = repeat('0', 64) WHERE seq = 2`, 2},
		{"Hash", `UPDATE entries SET hash = repeat('0', 64) WHERE seq = 4`, 4},
		{"Prev", `UPDATE entries SET prev = repeat('1', 64) WHERE seq = 5`, 5},
		{"GenesisPrev", `UPDATE entries SET prev = repeat('1', 64) WHERE seq = 1`, 1},
		{"Kind", `UPDATE entries SET kind = 'other.kind' WHERE seq = 2`, 2},
		{"Actor", `UPDATE entries SET actor = 'someone' WHERE seq = 6`, 6},
		{"TwoRows", `UPDATE entries SET trace = 'x' WHERE seq IN (5, 2)`, 2},
		{"Deleted", `DELETE FROM entries WHERE seq = 4`, 4},
		{"Reordered", `UPDATE entries SET seq = seq + 10 WHERE seq = 3`, 3},
		{"TailCut", `DELETE FROM entries WHERE seq > 4`, 5},
		{"CheckpointHead", `UPDATE checkpoints SET head = (SELECT hash FROM entries WHERE seq = 2) WHERE size = 3`, 3},
		{"CheckpointSig", `UPDATE checkpoints SET sig = (SELECT sig FROM checkpoints WHERE size = 6) WHERE size = 3`, 3},
		{"CheckpointLedger", `UPDATE checkpoints SET ledger = repeat('a', 32) WHERE size = 6`, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, url := sixEntries(t)
			disableAppendOnly(t, url)
			pgtest.Exec(t, url, tc.sql)
			_, err := db.Verify(context.Background())
			wantVerifyError(t, "Verify", err, tc.seq)
			var out bytes.Buffer
			if err := db.ExportJSONL(context.Background(), &out); err != nil {
				t.Fatalf("ExportJSONL of the edited tables: %v", err)
			}
			_, err = ledger.VerifyJSONL(&out, db.PublicKey())
			wantVerifyError(t, "VerifyJSONL of the export", err, tc.seq)
		})
	}
}

// TestVerifyStoredRefs: refs that are not a JSON object of strings are
// reported at their seq by Verify, Entries and ExportJSONL alike.
func TestVerifyStoredRefs(t *testing.T) {
	db, url := sixEntries(t)
	disableAppendOnly(t, url)
	pgtest.Exec(t, url, `UPDATE entries SET refs = '["x"]' WHERE seq = 3`)
	ctx := context.Background()
	_, err := db.Verify(ctx)
	wantVerifyError(t, "Verify", err, 3)
	_, err = db.Entries(ctx, custody.Query{})
	wantVerifyError(t, "Entries", err, 3)
	err = db.ExportJSONL(ctx, io.Discard)
	wantVerifyError(t, "ExportJSONL", err, 3)
}

// TestVerifyRewrittenChain rewrites an entry and reseals every entry
// after it, as whoever can write the tables but lacks the key would: the
// chain holds, the first checkpoint after the edit does not. Without its
// checkpoints the chain verifies but is not covered.
func TestVerifyRewrittenChain(t *testing.T) {
	db, url := sixEntries(t)
	ctx := context.Background()
	es, err := db.Entries(ctx, custody.Query{})
	if err != nil {
		t.Fatal(err)
	}
	es[1].Body = []byte(`{"n":"rewritten"}`)
	for i := 1; i < len(es); i++ {
		if err := new(ledger.Sealer).Seal(es[i-1].Hash, &es[i]); err != nil {
			t.Fatal(err)
		}
	}
	disableAppendOnly(t, url)
	pool := rawPool(t, url)
	for _, e := range es[1:] {
		if _, err := pool.Exec(ctx, `UPDATE entries SET body = $2, body_sha256 = $3, prev = $4, hash = $5 WHERE seq = $1`,
			e.Seq, []byte(e.Body), e.BodySHA256, e.Prev, e.Hash); err != nil {
			t.Fatal(err)
		}
	}
	_, err = db.Verify(ctx)
	wantVerifyError(t, "Verify of a resealed chain", err, 3)
	_, err = db.VerifyWith(ctx, nil)
	wantVerifyError(t, "VerifyWith no key of a resealed chain", err, 3)

	pgtest.Exec(t, url, `DELETE FROM checkpoints`)
	rep, err := db.Verify(ctx)
	if err != nil || rep.Entries != 6 || rep.Checkpoints != 0 {
		t.Fatalf("Verify without checkpoints = %+v, %v; want 6 entries, none covered", rep, err)
	}
	wantVerifyError(t, "Strict", rep.Strict(), 1)
}

// TestVerifyWithKeys: the ledger verifies against its own key, is
// refused against another at the first checkpoint, and against no key
// checks the checkpoints' heads only.
func TestVerifyWithKeys(t *testing.T) {
	db, url := sixEntries(t)
	ctx := context.Background()
	rep, err := db.Verify(ctx)
	if err != nil || rep.Entries != 6 || rep.Checkpoints != 2 || rep.Covered != 6 || !rep.Signed || rep.Ledger != db.LedgerID() {
		t.Fatalf("Verify = %+v, %v", rep, err)
	}
	other, _, _ := ed25519.GenerateKey(rand.Reader)
	_, err = db.VerifyWith(ctx, other)
	wantVerifyError(t, "VerifyWith another key", err, 3)
	pgtest.Exec(t, url, `UPDATE checkpoints SET sig = (SELECT sig FROM checkpoints WHERE size = 6) WHERE size = 3`)
	if rep, err := db.VerifyWith(ctx, nil); err != nil || rep.Signed || rep.Checkpoints != 2 {
		t.Fatalf("VerifyWith no key of a bad signature = %+v, %v; want the heads checked, unsigned", rep, err)
	}
}

// TestVerifyEmpty: an empty ledger verifies, with nothing in it.
func TestVerifyEmpty(t *testing.T) {
	db := open(t, pgtest.URL(t), Options{})
	rep, err := db.Verify(context.Background())
	if err != nil || rep.Entries != 0 || rep.Checkpoints != 0 || rep.Head != "" {
		t.Fatalf("Verify of an empty ledger = %+v, %v", rep, err)
	}
	var out bytes.Buffer
	if err := db.ExportJSONL(context.Background(), &out); err != nil || out.Len() != 0 {
		t.Fatalf("ExportJSONL of an empty ledger = %q, %v", out.String(), err)
	}
}

// TestExportJSONL: the export holds every entry in seq order with each
// checkpoint right after the entry it covers, and verifies offline
// against the exported public key.
func TestExportJSONL(t *testing.T) {
	db, _ := sixEntries(t)
	appendN(t, db, 1, "t2") // a tail no checkpoint covers yet
	var out bytes.Buffer
	if err := db.ExportJSONL(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	pub, err := readPub(db.PublicKeyFile())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ledger.VerifyJSONL(bytes.NewReader(out.Bytes()), pub)
	if err != nil || rep.Entries != 7 || rep.Checkpoints != 2 || rep.Covered != 6 {
		t.Fatalf("VerifyJSONL of the export = %+v, %v", rep, err)
	}
	var order []string
	d := ledger.NewDecoder(bytes.NewReader(out.Bytes()))
	for {
		l, err := d.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case l.Entry != nil:
			order = append(order, fmt.Sprint("e", l.Entry.Seq))
		case l.Checkpoint != nil:
			order = append(order, fmt.Sprint("c", l.Checkpoint.Size))
		}
	}
	if got, want := strings.Join(order, " "), "e1 e2 e3 c3 e4 e5 e6 c6 e7"; got != want {
		t.Fatalf("export order %q, want %q", got, want)
	}
}

// failingWriter fails every write.
type failingWriter struct{}

var errDiskFull = errors.New("disk full")

func (failingWriter) Write([]byte) (int, error) { return 0, errDiskFull }

// TestExportWriteFails: a failure of the writer ends the export with it.
func TestExportWriteFails(t *testing.T) {
	db, _ := sixEntries(t)
	if err := db.ExportJSONL(context.Background(), failingWriter{}); !errors.Is(err, errDiskFull) {
		t.Fatalf("ExportJSONL into a failing writer: %v, want its error", err)
	}
}
