package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/custody-dev/custody"
)

// TestIndexMerges indexes entries in many small updates, with chunks of
// four keys, so that segments keep merging while entries are appended,
// and checks every kind of lookup against a scan of the entries, before
// and after reopening.
func TestIndexMerges(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := openDir(t, dir, Options{indexChunkKeys: 4})
	var all []custody.Entry
	for i := range 300 {
		refs := map[string]string{"n": fmt.Sprint(i % 7)}
		if i%3 == 0 {
			refs["call"] = fmt.Sprint(i)
		}
		e := entry(fmt.Sprintf("kind-%d", i%4), fmt.Sprintf("trace-%d", i%11), refs, i)
		all = append(all, mustAppend(t, db, e))
		if i%2 == 1 {
			// Make the indexer commit: 150 updates of two entries
			// at most, enough for a segment to merge twice.
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
		{Trace: "trace-6", After: 250},
		{Trace: "no-such-trace"},
		{Kind: "no-such-kind"},
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
	settleMerges(t, db.lk)
	check(t, db)
	segs := storedSegments(t, dir)
	if len(segs) >= 60 {
		t.Errorf("%d segments for 60 or more updates: none merged", len(segs))
	}
	if segs[0].class < 2 {
		t.Errorf("the oldest segment is of class %d, want merged twice at least", segs[0].class)
	}
	next := int64(1)
	for _, s := range segs {
		if s.first != next || s.last < s.first || s.entries != s.last-s.first+1 {
			t.Fatalf("segment %d holds %d-%d (%d entries), want contiguous from %d", s.id, s.first, s.last, s.entries, next)
		}
		next = s.last + 1
	}
	if next != 301 {
		t.Errorf("segments end at %d, want 300", next-1)
	}
	want := 0
	for _, e := range all {
		want += 2 + len(e.Refs) // trace, kind, refs
	}
	if got := storedPostings(t, dir); got != want {
		t.Errorf("the segments hold %d postings, want one per trace, kind and ref: %d", got, want)
	}
	var counted int
	for _, s := range segs {
		counted += int(s.postings)
	}
	if counted != want {
		t.Errorf("the segments count %d postings, want %d", counted, want)
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

// storedSegments returns the segments of the index in dir, in seq order.
func storedSegments(t *testing.T, dir string) []segment {
	t.Helper()
	raw := openRawIndex(t, dir)
	defer raw.Close()
	rows, err := raw.Query(`SELECT id, class, first, last, entries, postings FROM segments ORDER BY first`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var segs []segment
	for rows.Next() {
		var s segment
		if err := rows.Scan(&s.id, &s.class, &s.first, &s.last, &s.entries, &s.postings); err != nil {
			t.Fatal(err)
		}
		segs = append(segs, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return segs
}

// storedPostings counts the postings of every chunk of the index in dir.
func storedPostings(t *testing.T, dir string) int {
	t.Helper()
	raw := openRawIndex(t, dir)
	defer raw.Close()
	rows, err := raw.Query(`SELECT s.first, c.data FROM chunks c JOIN segments s ON c.id >> 32 = s.id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ps []posting
	for rows.Next() {
		var first int64
		var data []byte
		if err := rows.Scan(&first, &data); err != nil {
			t.Fatal(err)
		}
		if ps, err = appendPostings(ps, data, first); err != nil {
			t.Fatal(err)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return len(ps)
}

// TestIndexSegments indexes updates of ten entries each and looks up
// from inside a segment, across segments and with a second key: over
// two segments, and over eight merged into one.
func TestIndexSegments(t *testing.T) {
	for _, updates := range []int{2, segmentFanIn} {
		t.Run(fmt.Sprintf("updates=%d", updates), func(t *testing.T) {
			ctx := context.Background()
			main, lk, dir := openIndex(t, Options{indexChunkKeys: 2})
			var seq int64
			for range updates {
				var rows []indexRow
				for range 10 {
					seq++
					rows = append(rows, indexRow{seq: seq, trace: "t", kind: fmt.Sprint("k", seq%2),
						refs: []string{"n", fmt.Sprint(seq % 3), "u", fmt.Sprint(seq)}})
				}
				if err := lk.update(ctx, main, rows); err != nil {
					t.Fatal(err)
				}
			}
			settleMerges(t, lk)
			segs := storedSegments(t, dir)
			if want := map[int]int{2: 2, segmentFanIn: 1}[updates]; len(segs) != want {
				t.Fatalf("%d segments, want %d", len(segs), want)
			}
			for _, tt := range []struct {
				q    custody.Query
				want string
			}{
				{custody.Query{Trace: "t", After: 4, Limit: 3}, "[5 6 7]"},
				{custody.Query{Trace: "t", After: 8, Limit: 4}, "[9 10 11 12]"},
				{custody.Query{Trace: "t", After: seq - 1, Limit: 4}, fmt.Sprintf("[%d]", seq)},
				{custody.Query{Trace: "t", After: seq, Limit: 4}, "[]"},
				{custody.Query{Kind: "k1", After: 3, Limit: 4}, "[5 7 9 11]"},
				{custody.Query{Refs: map[string]string{"u": "17"}, Limit: 10}, "[17]"},
				{custody.Query{Trace: "t", Refs: map[string]string{"n": "2"}, After: 5, Limit: 5}, "[8 11 14 17 20]"},
				{custody.Query{Refs: map[string]string{"n": "2", "u": "11"}, Limit: 10}, "[11]"},
				{custody.Query{Refs: map[string]string{"n": "1", "u": "11"}, Limit: 10}, "[]"},
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
			if got, want := storedPostings(t, dir), 10*updates*4; got != want {
				t.Errorf("the segments hold %d postings, want %d", got, want)
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

// TestSegmentEncoding encodes random postings, cut into chunks of three
// keys, and finds every key's seqs again, and no seqs for keys it does
// not hold.
func TestSegmentEncoding(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const first = 1000
	var ps []posting
	want := map[int64][]int64{}
	for seq := int64(first); seq < first+500; seq++ {
		for range 1 + r.IntN(3) {
			key := int64(r.Uint64() >> r.IntN(62)) // some keys close together, some repeated
			if r.IntN(4) == 0 {
				key = -key
			}
			ps = append(ps, posting{key, seq})
			if s := want[key]; len(s) == 0 || s[len(s)-1] != seq {
				want[key] = append(s, seq)
			}
		}
	}
	ps = sortPostings(ps)
	chunks, firsts, filter := encodeSegment(ps, first, 3)
	if len(chunks) != len(firsts) || len(chunks) != (len(want)+2)/3 {
		t.Fatalf("%d chunks, %d first keys for %d keys in threes", len(chunks), len(firsts), len(want))
	}
	if !slices.Equal(decodeChunks(t, chunks, first), ps) {
		t.Fatal("the chunks do not decode to the postings encoded")
	}
	s := &segment{first: first, filter: filter, firsts: firsts}
	for key, seqs := range want {
		if got, err := s.seqs(key, seqRange{}, nil, chunkReader(t, chunks)); err != nil || !slices.Equal(got, seqs) {
			t.Fatalf("key %d: %v, %v; want %v", key, got, err, seqs)
		}
	}
	for range 1000 {
		key := int64(r.Uint64())
		if _, ok := want[key]; ok {
			continue
		}
		if got, err := s.seqs(key, seqRange{}, nil, chunkReader(t, chunks)); err != nil || len(got) != 0 {
			t.Fatalf("absent key %d: %v, %v", key, got, err)
		}
	}
}

// decodeChunks decodes every posting of chunks, of a segment starting at
// first.
func decodeChunks(t *testing.T, chunks [][]byte, first int64) []posting {
	t.Helper()
	var ps []posting
	for _, c := range chunks {
		var err error
		if ps, err = appendPostings(ps, c, first); err != nil {
			t.Fatal(err)
		}
	}
	return ps
}

// chunkReader reads chunks from memory, and counts the reads in t's log.
func chunkReader(t *testing.T, chunks [][]byte) func(n int) ([]byte, error) {
	return func(n int) ([]byte, error) {
		if n < 0 || n >= len(chunks) {
			t.Fatalf("read chunk %d of %d", n, len(chunks))
		}
		return chunks[n], nil
	}
}

// TestLongKey cuts the seqs of a key of many entries, as a kind has,
// across chunks, between keys of few: every part of them is found, and
// a lookup from a seq on with a limit reads only the chunks it needs.
func TestLongKey(t *testing.T) {
	const first, n = 1, 40000
	var ps []posting
	for seq := int64(first); seq < first+n; seq++ {
		ps = append(ps, posting{0, seq}, posting{seq, seq}, posting{-seq, seq})
		if seq%2 == 0 {
			ps = append(ps, posting{7, seq}) // a second long key, after the first
		}
	}
	ps = sortPostings(ps)
	chunks, firsts, filter := encodeSegment(ps, first, chunkKeys)
	s := &segment{first: first, filter: filter, firsts: firsts}
	_, end := s.chunksOf(0, 0)
	if start, _ := s.chunksOf(0, 0); end-start < 3 {
		t.Fatalf("key 0's seqs are in chunks %d-%d: not cut", start, end-1)
	}
	for _, tt := range []struct {
		key          int64
		after, limit int64
	}{{0, 0, 0}, {0, 0, 10}, {0, 12345, 100}, {0, 39990, 100}, {0, 39999, 5}, {0, 40000, 5}, {7, 20000, 3}, {7, 0, 0}, {123, 0, 0}, {-123, 122, 1}} {
		reads := 0
		got, err := s.seqs(tt.key, seqRange{tt.after, tt.limit}, nil, func(i int) ([]byte, error) {
			reads++
			return chunkReader(t, chunks)(i)
		})
		var want []int64
		for _, p := range ps {
			if p.key == tt.key && p.seq > tt.after && (tt.limit == 0 || int64(len(want)) < tt.limit) {
				want = append(want, p.seq)
			}
		}
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("key %d after %d limit %d: %d seqs %v; want %d", tt.key, tt.after, tt.limit, len(got), err, len(want))
		}
		if tt.limit > 0 && tt.limit <= 100 && reads > 2 {
			t.Errorf("key %d after %d limit %d: read %d chunks for at most 100 seqs", tt.key, tt.after, tt.limit, reads)
		}
	}
	if !slices.Equal(decodeChunks(t, chunks, first), ps) {
		t.Error("the chunks do not decode to the postings encoded")
	}
	if got, err := decodeFirsts(encodeFirsts(firsts)); err != nil || !slices.Equal(got, firsts) {
		t.Errorf("chunk starts round trip: %v", err)
	}
}

// TestCorruptChunk: a chunk that does not decode is an error, never seqs.
func TestCorruptChunk(t *testing.T) {
	chunks, _, _ := encodeSegment([]posting{{5, 10}, {5, 12}, {9, 11}}, 10, 8)
	good := chunks[0]
	for name, c := range map[string][]byte{
		"short key":       good[:5],
		"length too long": good[:10],
		"zero distance":   append(append([]byte{}, good[:8]...), 2, 1, 0),
		"bad uvarint":     append(append([]byte{}, good[:8]...), 1, 0x80),
		// A distance that would carry the seq past the largest int64
		// (found by FuzzChunk: it decoded to a negative seq).
		"past the last seq": append(append([]byte{}, good[:8]...), 10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 1),
	} {
		if _, err := appendPostings(nil, c, 10); err == nil {
			t.Errorf("%s: decoded", name)
		}
		if _, err := findSeqs(nil, c, 5, 10, seqRange{}); err == nil {
			t.Errorf("%s: found seqs", name)
		}
	}
	if got, err := findSeqs(nil, good, 9, 10, seqRange{}); err != nil || !slices.Equal(got, []int64{11}) {
		t.Errorf("intact chunk: %v, %v", got, err)
	}
}

// TestBloom: a filter has every key added, and rules out most others.
func TestBloom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const n = 10000
	f := newBloom(n)
	added := map[int64]bool{}
	for range n {
		k := int64(r.Uint64())
		added[k] = true
		f.add(k)
	}
	for k := range added {
		if !f.has(k) {
			t.Fatalf("key %d added, not found", k)
		}
	}
	falsePositives := 0
	for range n {
		if k := int64(r.Uint64()); !added[k] && f.has(k) {
			falsePositives++
		}
	}
	if rate := float64(falsePositives) / n; rate > 0.02 {
		t.Errorf("false positive rate %.3f, want about 0.01", rate)
	}
	back, err := decodeBloom(f.bytes())
	if err != nil || !slices.Equal(back, f) {
		t.Errorf("round trip: %v", err)
	}
	if _, err := decodeBloom([]byte{1, 2, 3}); err == nil {
		t.Error("a filter of 3 bytes decoded")
	}
	if _, err := decodeFirsts(make([]byte, 8)); err == nil {
		t.Error("chunk starts of 8 bytes decoded")
	}
}

func TestSegmentClass(t *testing.T) {
	for _, c := range []struct {
		entries int64
		want    int
	}{{1, 0}, {7, 0}, {8, 1}, {63, 1}, {64, 2}, {4095, 3}, {4096, 4}, {32767, 4}, {32768, 5}, {1 << 40, finalClass}} {
		if got := segmentClass(c.entries); got != c.want {
			t.Errorf("segmentClass(%d) = %d, want %d", c.entries, got, c.want)
		}
	}
}

// plantSegment adds to the index in dir a segment holding postings ps
// of the entries first to last, as a hash collision or damage would.
func plantSegment(t *testing.T, dir string, first, last int64, ps []posting) {
	t.Helper()
	raw := openRawIndex(t, dir)
	defer raw.Close()
	chunks, firsts, filter := encodeSegment(sortPostings(ps), first, chunkKeys)
	res, err := raw.Exec(`INSERT INTO segments (class, first, last, entries, postings, filter, firsts) VALUES (0, ?, ?, ?, ?, ?, ?)`,
		first, last, last-first+1, len(ps), filter.bytes(), encodeFirsts(firsts))
	if err != nil {
		t.Fatal(err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		t.Fatal(err)
	}
	for n, c := range chunks {
		if _, err := raw.Exec(`INSERT INTO chunks (id, data) VALUES (?, ?)`, chunkID(id, n), c); err != nil {
			t.Fatal(err)
		}
	}
	bumpGen(t, raw)
}

func bumpGen(t *testing.T, raw *sql.DB) {
	t.Helper()
	if _, err := raw.Exec(`UPDATE index_meta SET gen = gen + 1`); err != nil {
		t.Fatal(err)
	}
}

// TestLookupsWhileMerging: writers look up their own trace after every
// append while the index keeps writing and merging segments; each finds
// exactly what it appended, whatever merge the lookup meets.
func TestLookupsWhileMerging(t *testing.T) {
	ctx := context.Background()
	db := openDir(t, t.TempDir(), Options{indexChunkKeys: 4})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			trace := fmt.Sprint("writer-", w)
			var mine []int64
			for i := range 60 {
				e, err := db.Append(ctx, entry(fmt.Sprint("k", i%3), trace, map[string]string{"i": fmt.Sprint(i)}, i))
				if err != nil {
					t.Error(err)
					return
				}
				mine = append(mine, e.Seq)
				got, err := db.Entries(ctx, custody.Query{Trace: trace, Limit: 1000})
				if err != nil {
					t.Error(err)
					return
				}
				var seqs []int64
				for _, g := range got {
					seqs = append(seqs, g.Seq)
				}
				if !slices.Equal(seqs, mine) {
					t.Errorf("%s after %d appends finds %v, want %v", trace, i+1, seqs, mine)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestMergeRuns merges from one to nine sorted runs, some empty, and gets
// what sorting them all gets.
func TestMergeRuns(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for runs := 1; runs <= 9; runs++ {
		var ps []posting
		var bounds []int
		for range runs {
			bounds = append(bounds, len(ps))
			var run []posting
			for range r.IntN(3) * r.IntN(50) {
				run = append(run, posting{int64(r.IntN(40)), int64(r.IntN(1000))})
			}
			ps = append(ps, sortPostings(run)...)
		}
		want := slices.Clone(ps)
		slices.SortFunc(want, comparePostings)
		got, spare := mergeRuns(ps, nil, append(bounds, len(ps)))
		if !slices.Equal(got, want) {
			t.Fatalf("%d runs: merged %v, want %v", runs, got, want)
		}
		if len(spare) != len(got) {
			t.Fatalf("%d runs: spare of %d, want %d", runs, len(spare), len(got))
		}
	}
}

// settleMerges waits until no merge of lk's segments is due.
func settleMerges(t testing.TB, lk *lookups) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for {
		due, err := mergeDue(ctx, lk)
		if err != nil {
			t.Fatal(err)
		}
		if !due {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("merges still due after 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}

// mergeDue reports whether some of lk's segments are due to be merged.
func mergeDue(ctx context.Context, lk *lookups) (bool, error) {
	tx, err := lk.rdb.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	segs, err := lk.listSegmentRows(ctx, tx)
	return dueMerge(segs) != nil, err
}

func TestDueMerge(t *testing.T) {
	segs := func(classes ...int) []segment {
		var out []segment
		for i, c := range classes {
			out = append(out, segment{id: int64(i), class: c})
		}
		return out
	}
	ids := func(ss []segment) []int64 {
		var out []int64
		for _, s := range ss {
			out = append(out, s.id)
		}
		return out
	}
	for _, c := range []struct {
		classes []int
		want    []int64
	}{
		{nil, nil},
		{[]int{3, 3, 3, 3, 3, 3, 3}, nil},
		{[]int{3, 3, 3, 3, 3, 3, 3, 3}, []int64{0, 1, 2, 3, 4, 5, 6, 7}},
		{[]int{4, 3, 3, 3, 3, 3, 3, 3, 3, 3}, []int64{1, 2, 3, 4, 5, 6, 7, 8}},
		{[]int{3, 3, 3, 3, 2, 3, 3, 3, 3}, nil}, // not in a row
		{[]int{5, 5, 5, 5, 5, 5, 5, 5, 5}, nil}, // the final class
		{[]int{5, 5, 2, 2, 2, 2, 2, 2, 2, 2, 1}, []int64{2, 3, 4, 5, 6, 7, 8, 9}},
	} {
		if got := ids(dueMerge(segs(c.classes...))); !slices.Equal(got, c.want) {
			t.Errorf("dueMerge(%v) = %v, want %v", c.classes, got, c.want)
		}
	}
}

// TestLookupsDoNotWaitForMerges holds a merge back just before it is
// installed: updates and lookups go on meanwhile, and find everything;
// the merge then installs, and lookups still find everything.
func TestLookupsDoNotWaitForMerges(t *testing.T) {
	ctx := context.Background()
	entered, release := make(chan struct{}, 1), make(chan struct{})
	var once sync.Once
	db := openDir(t, t.TempDir(), Options{mergeHook: func() {
		once.Do(func() {
			entered <- struct{}{}
			<-release
		})
	}})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unblock) // runs before Close, which waits for the merger
	var all []custody.Entry
	add := func(i int) {
		all = append(all, mustAppend(t, db, entry("k", fmt.Sprint("t", i%3), nil, i)))
		// One update per entry: eight make a merge due. An update
		// that waited for the merge held back would time out.
		updated, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if _, err := db.Entries(updated, custody.Query{Trace: "t0"}); err != nil {
			t.Fatal(err)
		}
	}
	i := 0
	for held := false; !held; i++ {
		if i == 100 {
			t.Fatal("no merge began after 100 updates")
		}
		add(i)
		select {
		case <-entered:
			held = true
		default:
		}
	}
	for range 20 {
		add(i)
		i++
		lookupCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		got, err := db.Entries(lookupCtx, custody.Query{Trace: "t1", Limit: 1000})
		cancel()
		if err != nil {
			t.Fatalf("lookup while a merge is held: %v", err)
		}
		if want := scanSeqs(all, custody.Query{Trace: "t1", Limit: 1000}); fmt.Sprint(seqsOfEntries(got)) != want {
			t.Fatalf("while a merge is held: %v, want %s", seqsOfEntries(got), want)
		}
	}
	unblock()
	settleMerges(t, db.lk)
	for _, q := range []custody.Query{{Trace: "t0", Limit: 1000}, {Trace: "t2", Limit: 1000}, {Kind: "k", Limit: 1000}} {
		if got, want := seqsOf(t, db, q), scanSeqs(all, q); got != want {
			t.Errorf("%+v after the merge: %s, want %s", q, got, want)
		}
	}
}

func seqsOfEntries(es []custody.Entry) []int64 {
	var out []int64
	for _, e := range es {
		out = append(out, e.Seq)
	}
	return out
}

// TestMergeLostToAnother: a merge whose segments another merge replaced
// meanwhile installs nothing and loses nothing.
func TestMergeLostToAnother(t *testing.T) {
	ctx := context.Background()
	main, lk, dir := openIndex(t, Options{})
	lk.stopMerges() // this test merges by hand
	for i := range int64(segmentFanIn) {
		rows := []indexRow{{seq: 2*i + 1, trace: "t", kind: "k"}, {seq: 2*i + 2, trace: "u", kind: "k"}}
		if err := lk.update(ctx, main, rows); err != nil {
			t.Fatal(err)
		}
	}
	inputs, ps, bounds, err := lk.readMerge(ctx, nil)
	if err != nil || len(inputs) != segmentFanIn {
		t.Fatalf("readMerge: %d segments, %v", len(inputs), err)
	}
	if merged, err := lk.mergeOnce(ctx); !merged || err != nil {
		t.Fatalf("first merge: %v, %v", merged, err)
	}
	ps, _ = mergeRuns(ps, nil, bounds)
	if installed, err := lk.installMerge(ctx, inputs, ps); installed || err != nil {
		t.Fatalf("second merge of the same segments: installed %v, %v", installed, err)
	}
	if segs := storedSegments(t, dir); len(segs) != 1 {
		t.Fatalf("%d segments, want the one merged", len(segs))
	}
	got, err := lk.seqs(ctx, custody.Query{Trace: "u", Limit: 100})
	if err != nil || fmt.Sprint(got) != "[2 4 6 8 10 12 14 16]" {
		t.Errorf("trace u: %v, %v", got, err)
	}
}

// TestTwoProcessesMerge opens one directory twice, as two processes
// would: both append, index, merge and look up at once, and each finds
// every entry of either, in segments that still cover the ledger once.
func TestTwoProcessesMerge(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dbs := []*DB{openDir(t, dir, Options{indexChunkKeys: 4}), openDir(t, dir, Options{indexChunkKeys: 4})}
	var wg sync.WaitGroup
	for p, db := range dbs {
		for w := range 4 {
			wg.Go(func() {
				trace := fmt.Sprintf("p%d-w%d", p, w)
				var mine []int64
				for i := range 40 {
					e, err := db.Append(ctx, entry("k", trace, nil, i))
					if err != nil {
						t.Error(err)
						return
					}
					mine = append(mine, e.Seq)
					// Look up through the other process as well.
					got, err := dbs[(p+i)%2].Entries(ctx, custody.Query{Trace: trace, Limit: 1000})
					if err != nil {
						t.Error(err)
						return
					}
					if seqs := seqsOfEntries(got); !slices.Equal(seqs, mine) {
						t.Errorf("%s after %d appends finds %v, want %v", trace, i+1, seqs, mine)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	for _, db := range dbs {
		settleMerges(t, db.lk)
	}
	segs := storedSegments(t, dir)
	next := int64(1)
	for _, s := range segs {
		if s.first != next {
			t.Fatalf("segment %d starts at %d, want %d: %+v", s.id, s.first, next, segs)
		}
		next = s.last + 1
	}
	if next != 2*4*40+1 {
		t.Errorf("segments end at %d, want %d", next-1, 2*4*40)
	}
	if got, want := storedPostings(t, dir), 2*4*40*2; got != want {
		t.Errorf("%d postings, want %d", got, want)
	}
	all, err := dbs[0].Entries(ctx, custody.Query{Kind: "k", Limit: 1000})
	if err != nil || len(all) != 2*4*40 {
		t.Errorf("kind k: %d entries, %v", len(all), err)
	}
}
