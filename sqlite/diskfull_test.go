package sqlite

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/lockedbuf"
	"github.com/custody-dev/custody/internal/smallfs"
)

// On a full disk an append is refused as unavailable, saying so, and
// leaves nothing of itself: the head stays where it was, the chain
// verifies, and once space is freed the next entry follows the last
// one acknowledged, in this process and after the store is opened again.
func TestAppendOnFullDisk(t *testing.T) {
	dir := smallfs.Mount(t, 3<<20)
	ctx := context.Background()
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Space to free later, then entries until one does not fit.
	free := smallfs.Fill(t, dir, 1<<20)
	padded := func(i int) custody.Entry {
		e := entry("test.padded", "trace-full", map[string]string{"i": "x"}, i)
		e.Body = []byte(`{"pad":"` + strings.Repeat("x", 2000) + `"}`)
		return e
	}
	var last custody.Entry
	var refused error
	for i := range 5000 {
		got, err := db.Append(ctx, padded(i))
		if err != nil {
			refused = err
			break
		}
		last = got
	}
	if refused == nil {
		t.Fatal("5000 entries of 2 KB fit on a 3 MB filesystem")
	}
	if custody.ErrorKind(refused) != custody.EUNAVAILABLE || !strings.Contains(refused.Error(), "full") {
		t.Fatalf("refused with %v, want unavailable naming the full disk", refused)
	}
	if h, err := db.Head(ctx); err != nil || h.Seq != last.Seq || h.Hash != last.Hash {
		t.Fatalf("head %+v, %v after the refusal; want the last entry acknowledged, %d", h, err, last.Seq)
	}

	free()
	small := entry("test.small", "trace-full", nil, 0)
	next := mustAppend(t, db, small)
	if next.Seq != last.Seq+1 || next.Prev != last.Hash {
		t.Fatalf("after freeing space: seq %d prev %.12s, want %d after %.12s", next.Seq, next.Prev, last.Seq+1, last.Hash)
	}
	if rep, err := db.Verify(ctx); err != nil || rep.Entries != next.Seq {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
	if es, err := db.Entries(ctx, custody.Query{Trace: "trace-full", Kind: "test.small"}); err != nil || len(es) != 1 || es[0].Seq != next.Seq {
		t.Fatalf("lookup of the entry after the refusals: %d entries, %v", len(es), err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	again := openDir(t, dir, Options{})
	if rep, err := again.Verify(ctx); err != nil || rep.Entries != next.Seq {
		t.Fatalf("verify after reopening: %+v, %v", rep, err)
	}
}

// A store that cannot open for want of disk space says how much is left
// (SQLite calls it an I/O error), and opens as it was once space is
// freed.
func TestOpenOnFullDisk(t *testing.T) {
	ctx := context.Background()
	opts := Options{}
	dir, reserve := keptOnSmallDisk(t, opts)
	rest := smallfs.Fill(t, dir, 0)
	if db, err := Open(dir, opts); err == nil {
		db.Close()
		t.Fatal("the store opened on a full disk")
	} else if !strings.Contains(err.Error(), "bytes free)") {
		t.Fatalf("open on a full disk: %v; want it to say how much space is free", err)
	}
	rest()
	reserve()
	db := openDir(t, dir, opts)
	if es, err := db.Entries(ctx, custody.Query{Trace: "trace-kept"}); err != nil || len(es) != 50 {
		t.Fatalf("lookup after space was freed: %d entries, %v", len(es), err)
	}
	if rep, err := db.Verify(ctx); err != nil || rep.Entries != 50 {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}

// An index that cannot open for want of disk space is kept rather than
// rebuilt: a rebuild would not find the space either, and would throw
// away what a large ledger takes minutes to index again.
func TestIndexKeptOnFullDisk(t *testing.T) {
	ctx := context.Background()
	var log lockedbuf.Buffer
	opts := Options{Logger: slog.New(slog.NewTextHandler(&log, nil))}.withDefaults()
	dir, reserve := keptOnSmallDisk(t, opts)
	main, err := openWriteDB(ctx, filepath.Join(dir, DatabaseFile), time.Now(), syncNormal)
	if err != nil {
		t.Fatal(err)
	}
	defer main.Close()

	rest := smallfs.Fill(t, dir, 0)
	if lk, err := openLookups(ctx, dir, main, opts); err == nil {
		lk.close()
		t.Fatal("the index opened on a full disk")
	} else if !resourceFailed(err) {
		t.Fatalf("open on a full disk: %v; want SQLite's full disk or I/O error", err)
	}
	if _, err := os.Stat(filepath.Join(dir, IndexFile)); err != nil {
		t.Fatalf("the index is gone: %v", err)
	}
	rest()
	reserve()
	lk, err := openLookups(ctx, dir, main, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.close()
	if seqs, err := lk.seqs(ctx, custody.Query{Trace: "trace-kept"}); err != nil || len(seqs) != 50 {
		t.Fatalf("lookup: %d seqs, %v", len(seqs), err)
	}
	if strings.Contains(log.String(), "rebuilding the lookup index") {
		t.Fatalf("the index was rebuilt:\n%s", log.String())
	}
}

// keptOnSmallDisk leaves, on a small filesystem of its own, a closed store
// of 50 entries of the trace "trace-kept", and a megabyte of the
// filesystem taken that reserve frees.
func keptOnSmallDisk(t *testing.T, opts Options) (dir string, reserve func()) {
	t.Helper()
	dir = smallfs.Mount(t, 3<<20)
	reserve = smallfs.Fill(t, dir, 1<<20)
	db := openDir(t, dir, opts)
	for i := range 50 {
		mustAppend(t, db, entry("test.kept", "trace-kept", nil, i))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, reserve
}

func TestByteSize(t *testing.T) {
	for n, want := range map[uint64]string{0: "0 bytes", 1023: "1023 bytes", 1536: "1.5 KiB", 5 << 20: "5.0 MiB", 3 << 30: "3.0 GiB", 2 << 40: "2.0 TiB"} {
		if got := byteSize(n); got != want {
			t.Errorf("byteSize(%d) = %q, want %q", n, got, want)
		}
	}
}
