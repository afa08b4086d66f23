package sqlite

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/custody-dev/custody"
)

// TestKeyRanges: the merge's key ranges cover every int64 key once, in
// order.
func TestKeyRanges(t *testing.T) {
	lo, _ := keyRange(0)
	if lo != math.MinInt64 {
		t.Fatalf("first range starts at %d, want MinInt64", lo)
	}
	for i := range mergeSlices {
		lo, hi := keyRange(i)
		if lo > hi {
			t.Fatalf("range %d: [%d, %d] is empty", i, lo, hi)
		}
		if i+1 < mergeSlices {
			next, _ := keyRange(i + 1)
			if next != hi+1 {
				t.Fatalf("range %d ends at %d, range %d starts at %d", i, hi, i+1, next)
			}
		} else if hi != math.MaxInt64 {
			t.Fatalf("last range ends at %d, want MaxInt64", hi)
		}
	}
}

// TestIndexMerges runs the index with a tiny recent level, so that its
// postings keep moving to the main level while entries are appended, and
// checks every kind of lookup against a scan of the entries, before and
// after reopening.
func TestIndexMerges(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := openDir(t, dir, Options{indexRecent: 8})
	var all []custody.Entry
	for i := range 300 {
		refs := map[string]string{"n": fmt.Sprint(i % 7)}
		if i%3 == 0 {
			refs["call"] = fmt.Sprint(i)
		}
		e := entry(fmt.Sprintf("kind-%d", i%4), fmt.Sprintf("trace-%d", i%11), refs, i)
		all = append(all, mustAppend(t, db, e))
		if i%50 == 49 {
			// Let the indexer commit, so that merges happen between
			// updates and not only in one.
			if _, err := db.Entries(ctx, custody.Query{Trace: "trace-0"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	queries := []custody.Query{
		{Trace: "trace-3"},
		{Kind: "kind-1"},
		{Kind: "kind-1", After: 100, Limit: 7},
		{Refs: map[string]string{"n": "5"}},
		{Refs: map[string]string{"call": "99"}},
		{Trace: "trace-2", Kind: "kind-2"},
		{Trace: "trace-4", Refs: map[string]string{"n": "4"}, Limit: 3},
		{Trace: "trace-5", Kind: "kind-0", Refs: map[string]string{"n": "6"}},
		{Trace: "no-such-trace"},
	}
	check := func(t *testing.T, db *DB) {
		t.Helper()
		for _, q := range queries {
			if got, want := seqsOf(t, db, q), scanSeqs(all, q); got != want {
				t.Errorf("%+v: %s, want %s", q, got, want)
			}
		}
	}
	check(t, db)
	main, recent := levelSizes(t, dir)
	if main == 0 {
		t.Fatalf("no posting reached the main level (recent holds %d)", recent)
	}
	want := 0
	for _, e := range all {
		want += 2 + len(e.Refs) // trace, kind, refs
	}
	if total := int(main + recent); total != want {
		t.Errorf("the levels hold %d postings, want one per trace, kind and ref: %d", total, want)
	}
	db.Close()
	check(t, openDir(t, dir, Options{}))
}

// scanSeqs returns what Entries must find for q among all, as seqsOf
// prints it.
func scanSeqs(all []custody.Entry, q custody.Query) string {
	var seqs []int64
	limit := q.Limit
	if limit == 0 {
		limit = DefaultLimit
	}
	for _, e := range all {
		if e.Seq > q.After && matches(&e, q) && len(seqs) < limit {
			seqs = append(seqs, e.Seq)
		}
	}
	return fmt.Sprint(seqs)
}

// levelSizes counts the postings of the main and the recent level.
func levelSizes(t *testing.T, dir string) (main, recent int64) {
	t.Helper()
	raw := openRawIndex(t, dir)
	defer raw.Close()
	if err := raw.QueryRow(`SELECT (SELECT count(*) FROM postings), (SELECT count(*) FROM recent)`).Scan(&main, &recent); err != nil {
		t.Fatal(err)
	}
	return main, recent
}
