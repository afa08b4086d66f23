package sqlite

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/lockedbuf"
)

// appendTraced appends n entries to trace, each with ref n=<i>.
func appendTraced(t *testing.T, db *DB, trace string, n int) []custody.Entry {
	t.Helper()
	var out []custody.Entry
	for i := range n {
		out = append(out, mustAppend(t, db, entry("k", trace, map[string]string{"n": fmt.Sprint(i)}, i)))
	}
	return out
}

// seqsOf returns the seqs Entries finds for q.
func seqsOf(t *testing.T, db *DB, q custody.Query) string {
	t.Helper()
	es, err := db.Entries(context.Background(), q)
	if err != nil {
		t.Fatalf("Entries(%+v): %v", q, err)
	}
	var seqs []int64
	for _, e := range es {
		seqs = append(seqs, e.Seq)
	}
	return fmt.Sprint(seqs)
}

func rawIndex(t *testing.T, dir string, stmts ...string) {
	t.Helper()
	raw := openRawIndex(t, dir)
	defer raw.Close()
	for _, s := range stmts {
		if _, err := raw.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// openRawIndex opens the index of dir as another process would.
func openRawIndex(t *testing.T, dir string) *sql.DB {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+filepath.Join(dir, IndexFile)+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestIndexRecovers(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string)
	}{
		{"Missing", func(t *testing.T, dir string) { removeDatabase(filepath.Join(dir, IndexFile)) }},
		{"Garbage", func(t *testing.T, dir string) {
			removeDatabase(filepath.Join(dir, IndexFile))
			if err := os.WriteFile(filepath.Join(dir, IndexFile), []byte("not a database, not at all"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"OtherVersion", func(t *testing.T, dir string) { rawIndex(t, dir, `PRAGMA user_version = 99`) }},
		{"Behind", func(t *testing.T, dir string) {
			// Segments holding seqs past 2 go, and upto falls to
			// before the first of them.
			rawIndex(t, dir,
				`UPDATE index_meta SET gen = gen + 1,
					upto = min(2, coalesce((SELECT min(first) FROM segments WHERE last > 2) - 1, 2))`,
				`DELETE FROM chunks WHERE id >> 32 IN (SELECT id FROM segments WHERE last > 2)`,
				`DELETE FROM segments WHERE last > 2`)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			db := openDir(t, dir, Options{})
			appendTraced(t, db, "a", 3)
			appendTraced(t, db, "b", 2)
			db.Close()
			tt.damage(t, dir)
			db = openDir(t, dir, Options{})
			if got := seqsOf(t, db, custody.Query{Trace: "a"}); got != "[1 2 3]" {
				t.Errorf("trace a: %s, want [1 2 3]", got)
			}
			if got := seqsOf(t, db, custody.Query{Refs: map[string]string{"n": "1"}}); got != "[2 5]" {
				t.Errorf("ref n=1: %s, want [2 5]", got)
			}
		})
	}
}

// TestTwoWriters opens the same directory twice, as two processes would:
// each continues the chain where the other left it, and each finds the
// other's entries.
func TestTwoWriters(t *testing.T) {
	dir := t.TempDir()
	a := openDir(t, dir, Options{})
	b := openDir(t, dir, Options{})
	appendTraced(t, a, "a", 2)
	fromB := appendTraced(t, b, "b", 2)
	if fromB[0].Seq != 3 {
		t.Fatalf("second writer appended at seq %d, want 3", fromB[0].Seq)
	}
	appendTraced(t, a, "a", 1)
	if got := seqsOf(t, a, custody.Query{Trace: "b"}); got != "[3 4]" {
		t.Errorf("first writer finds trace b at %s, want [3 4]", got)
	}
	// The other process appends last: a lookup still finds it.
	appendTraced(t, b, "c", 1)
	if got := seqsOf(t, a, custody.Query{Trace: "c"}); got != "[6]" {
		t.Errorf("first writer finds trace c, appended last by the other, at %s, want [6]", got)
	}
	// A checkpoint by the writer that did not append last still covers
	// the ledger's head.
	if cp, err := a.Checkpoint(context.Background()); err != nil || cp.Size != 6 {
		t.Errorf("checkpoint after the other's append: size %d, %v; want 6", cp.Size, err)
	}
	if _, err := a.Verify(context.Background()); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

// TestIndexCollisionFiltered plants a posting that claims entry 1 has
// trace x, as a hash collision would: the lookup checks and drops it.
func TestIndexCollisionFiltered(t *testing.T) {
	dir := t.TempDir()
	db := openDir(t, dir, Options{})
	appendTraced(t, db, "y", 2)
	mustAppend(t, db, entry("k", "x", nil, 3))
	plantSegment(t, dir, 1, 1, []posting{{postingKey(fieldTrace, "x"), 1}})
	if got := seqsOf(t, db, custody.Query{Trace: "x"}); got != "[3]" {
		t.Errorf("trace x: %s, want [3]", got)
	}
	if got := seqsOf(t, db, custody.Query{Trace: "x", Limit: 1}); got != "[3]" {
		t.Errorf("trace x, limit 1: %s, want [3]: a false hit must not use up the limit", got)
	}
}

// TestIndexFailureRefusesLookups breaks the index while the store runs:
// appends still succeed, lookups are refused rather than incomplete, the
// status and the log say so, and the index catches up once it works
// again.
func TestIndexFailureRefusesLookups(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var log lockedbuf.Buffer
	db := openDir(t, dir, Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	appendTraced(t, db, "a", 1)
	if got := seqsOf(t, db, custody.Query{Trace: "a"}); got != "[1]" { // indexed
		t.Fatalf("trace a: %s", got)
	}
	rawIndex(t, dir, `CREATE TRIGGER boom BEFORE INSERT ON segments BEGIN SELECT RAISE(ABORT, 'boom'); END`)
	mustAppend(t, db, entry("k", "a", nil, 2))
	if _, err := db.Entries(ctx, custody.Query{Trace: "a"}); kindOf(err) != custody.EUNAVAILABLE {
		t.Fatalf("lookup with a failing index: err = %v, want EUNAVAILABLE", err)
	}
	if got, err := db.Entries(ctx, custody.Query{}); err != nil || len(got) != 2 {
		t.Fatalf("unfiltered Entries = %d entries, %v; want 2", len(got), err)
	}
	if s, err := db.IndexStatus(ctx); err != nil || s.Failing == nil || !strings.Contains(s.Failing.Error(), "boom") || s.Indexed != 1 {
		t.Errorf("status of the failing index: %+v, %v; want failing with boom, indexed to 1", s, err)
	}
	if want := `level=ERROR msg="the lookup index failed`; !strings.Contains(log.String(), want) {
		t.Errorf("log lacks %s:\n%s", want, log.String())
	}
	rawIndex(t, dir, `DROP TRIGGER boom`)
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := db.Entries(ctx, custody.Query{Trace: "a"})
		if err == nil && len(got) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("index did not catch up: %d entries, %v", len(got), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if s, err := db.IndexStatus(ctx); err != nil || s.Failing != nil || s.Indexed != 2 || s.Segments < 1 {
		t.Errorf("status once caught up: %+v, %v; want working, indexed to 2", s, err)
	}
	if want := `msg="the lookup index works again"`; !strings.Contains(log.String(), want) {
		t.Errorf("log lacks %s:\n%s", want, log.String())
	}
}

// TestPostingKeyStable: the key of a posting is the first eight bytes of
// SHA-256(field NUL value), big-endian, whatever the length of the value:
// an index written before must still be found.
func TestPostingKeyStable(t *testing.T) {
	for _, c := range []struct{ field, value string }{
		{fieldTrace, ""},
		{fieldKind, custody.KindCallSucceeded},
		{fieldRef + "approval_request_id", "6f1c2a9e-4b7d-4e8a-9c3f-2d5b8e7a1c40"},
		{fieldTrace, strings.Repeat("é", 200)},
	} {
		sum := sha256.Sum256([]byte(c.field + "\x00" + c.value))
		if got, want := postingKey(c.field, c.value), int64(binary.BigEndian.Uint64(sum[:8])); got != want {
			t.Errorf("postingKey(%q, %.20q) = %d, want %d", c.field, c.value, got, want)
		}
	}
}

// TestRefsColumn: the stored refs are their JSON encoding, none included.
func TestRefsColumn(t *testing.T) {
	for _, refs := range []map[string]string{nil, {}, {"b": "<&>", "a": "1"}} {
		want, _ := json.Marshal(refs)
		if refs == nil {
			want = []byte("{}")
		}
		if got, err := refsColumn(refs); err != nil || got != string(want) {
			t.Errorf("refsColumn(%v) = %q, %v; want %q", refs, got, err, want)
		}
	}
}

// TestIndexRebuildLogged: an index of an older version is rebuilt when the
// store opens, and a rebuild longer than one chunk says so in the log,
// with where it starts and ends, so that a long start is not silent.
func TestIndexRebuildLogged(t *testing.T) {
	dir := t.TempDir()
	db := openDir(t, dir, Options{})
	const n = catchUpChunk + 500
	var wg sync.WaitGroup
	for w := range 32 {
		wg.Go(func() {
			for i := w; i < n; i += 32 {
				if _, err := db.Append(context.Background(), entry("k", fmt.Sprint("t", i%7), nil, i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	db.Close()
	rawIndex(t, dir, `PRAGMA user_version = 1`)

	var log bytes.Buffer
	db = openDir(t, dir, Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	for _, want := range []string{
		`msg="rebuilding the lookup index"`,
		`msg="indexing the ledger for lookups" from_seq=1 to_seq=4596`,
		`msg="indexed the ledger for lookups" entries=4596`,
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, log.String())
		}
	}
	all, err := db.Entries(context.Background(), custody.Query{Limit: n})
	if err != nil || len(all) != n {
		t.Fatalf("Entries: %d entries, %v; want %d", len(all), err, n)
	}
	q := custody.Query{Trace: "t3", Limit: n}
	if got, want := seqsOf(t, db, q), scanSeqs(all, q); got != want {
		t.Errorf("trace t3 after the rebuild: %s, want %s", got, want)
	}
}
