package sqlite

import (
	"context"
	"fmt"
	"math"
	"slices"
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

// levelSizes counts the postings (a key's seq) of the main and the
// recent level.
func levelSizes(t *testing.T, dir string) (main, recent int64) {
	t.Helper()
	raw := openRawIndex(t, dir)
	defer raw.Close()
	count := func(table string) int64 {
		rows, err := raw.Query(`SELECT seqs FROM ` + table)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var n int64
		for rows.Next() {
			var b []byte
			if err := rows.Scan(&b); err != nil {
				t.Fatal(err)
			}
			seqs, err := readRun(nil, b)
			if err != nil {
				t.Fatal(err)
			}
			n += int64(len(seqs))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return n
	}
	return count("runs"), count("recent")
}

// TestIndexRuns indexes two updates of ten entries each, so that every
// key has one row per update, and looks up from inside the rows, across
// them, and with a second key, on both levels.
func TestIndexRuns(t *testing.T) {
	for _, recent := range []int{1 << 20, 1} { // all rows in recent; moved to the main level
		t.Run(fmt.Sprintf("recent=%d", recent), func(t *testing.T) {
			ctx := context.Background()
			main, lk, dir := openIndex(t, Options{indexRecent: recent})
			var seq int64
			for range 2 {
				var rows []indexRow
				for range 10 {
					seq++
					rows = append(rows, indexRow{seq: seq, trace: "t", kind: fmt.Sprint("k", seq%2),
						refs: []string{"n", fmt.Sprint(seq % 3)}})
				}
				if err := lk.update(ctx, main, rows); err != nil {
					t.Fatal(err)
				}
			}
			if recent == 1 {
				// Each update moves one key range; these move the rest.
				for range mergeSlices {
					if err := lk.update(ctx, main, nil); err != nil {
						t.Fatal(err)
					}
				}
				if main, recent := levelSizes(t, dir); main == 0 || recent > 20 {
					t.Fatalf("the main level holds %d postings, recent %d: nothing moved", main, recent)
				}
			}
			for _, tt := range []struct {
				q    custody.Query
				want string
			}{
				{custody.Query{Trace: "t", After: 4, Limit: 3}, "[5 6 7]"},
				{custody.Query{Trace: "t", After: 8, Limit: 4}, "[9 10 11 12]"},
				{custody.Query{Trace: "t", After: 19, Limit: 4}, "[20]"},
				{custody.Query{Trace: "t", After: 20, Limit: 4}, "[]"},
				{custody.Query{Kind: "k1", After: 3, Limit: 4}, "[5 7 9 11]"},
				{custody.Query{Kind: "k0", Refs: map[string]string{"n": "0"}, Limit: 10}, "[6 12 18]"},
				{custody.Query{Trace: "t", Kind: "k1", Refs: map[string]string{"n": "2"}, After: 5, Limit: 10}, "[11 17]"},
				{custody.Query{Trace: "u", Limit: 10}, "[]"},
			} {
				got, err := lk.seqs(ctx, tt.q)
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(nilToEmpty(got)) != tt.want {
					t.Errorf("%+v: %v, want %s", tt.q, got, tt.want)
				}
			}
			if main, recent := levelSizes(t, dir); main+recent != 20*3 {
				t.Errorf("the levels hold %d + %d postings, want 60", main, recent)
			}
		})
	}
}

func nilToEmpty(s []int64) []int64 {
	if s == nil {
		return []int64{}
	}
	return s
}

func TestRunEncoding(t *testing.T) {
	seqs := []int64{1, 2, 300, 70000, 1 << 40}
	got, err := readRun(nil, appendRun(nil, seqs))
	if err != nil || !slices.Equal(got, seqs) {
		t.Fatalf("round trip: %v, %v", got, err)
	}
	if _, err := readRun(nil, []byte{0x80}); err == nil {
		t.Error("a truncated row decoded")
	}
}

// A kind and a trace whose keys collide still get one row per update,
// holding both's seqs.
func TestRunGroupMoveShared(t *testing.T) {
	var kinds, runs runGroup
	kinds.reset()
	runs.reset()
	for _, seq := range []int64{1, 2, 4} {
		kinds.add(7, seq)
	}
	kinds.add(9, 3)
	runs.add(7, 2)
	runs.add(7, 3)
	runs.add(8, 1)
	kinds.moveShared(&runs)
	if !slices.Equal(kinds.keys, []int64{9}) || len(kinds.seqs) != 1 {
		t.Errorf("kinds keep %v %v, want only key 9", kinds.keys, kinds.seqs)
	}
	if got := runs.seqs[7]; !slices.Equal(got, []int64{1, 2, 3, 4}) {
		t.Errorf("shared key: %v, want [1 2 3 4]", got)
	}
	if !slices.Equal(runs.keys, []int64{7, 8}) {
		t.Errorf("runs keys %v", runs.keys)
	}
}
