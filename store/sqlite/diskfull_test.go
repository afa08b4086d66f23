package sqlite

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/smallfs"
	"github.com/custody-dev/custody/internal/testclock"
)

// On a full disk an append is refused as unavailable, saying so, and
// leaves nothing of itself: the head stays where it was, the chain
// verifies, and once space is freed the next entry follows the last
// one acknowledged, in this process and after the store is opened again.
func TestAppendOnFullDisk(t *testing.T) {
	dir := smallfs.Mount(t, 3<<20)
	ctx := context.Background()
	db, err := Open(context.Background(), dir, smallDiskOptions())
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
	t.Logf("entry %d refused", last.Seq+1)
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
	opts := smallDiskOptions()
	dir, reserve := keptOnSmallDisk(t, opts)
	rest := smallfs.Fill(t, dir, 0)
	if db, err := Open(context.Background(), dir, opts); err == nil {
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

func TestByteSize(t *testing.T) {
	for n, want := range map[uint64]string{0: "0 bytes", 1023: "1023 bytes", 1536: "1.5 KiB", 5 << 20: "5.0 MiB", 3 << 30: "3.0 GiB", 2 << 40: "2.0 TiB"} {
		if got := byteSize(n); got != want {
			t.Errorf("byteSize(%d) = %q, want %q", n, got, want)
		}
	}
}

// smallDiskOptions are the options of a store on a small filesystem: a
// clock that stands still, so that every run writes the same bytes in the
// same order however loaded the machine is. With the wall clock the
// timestamps change length from run to run, and a slow run signs a
// checkpoint on the interval (and records it beside the store) while the
// disk fills, so the write that meets the full disk could differ.
func smallDiskOptions() Options {
	return Options{Now: testclock.New(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)).Now}
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
