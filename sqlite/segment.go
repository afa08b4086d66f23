package sqlite

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
)

// A segment of the lookup index holds the postings of a contiguous range
// of entries: for each key (see postingKey) the seqs of the entries in
// the range that have it. It is written once, by one index update or by
// merging the segments before it, and never changed.
//
// Its postings are stored in (key, seq) order in chunks, each a row of
// the chunks table holding up to chunkKeys keys, and cut at about
// chunkBytes, inside a key's seqs if need be. A chunk is a series of
//
//	key (8 bytes, big-endian) | uvarint length | seqs
//
// where seqs are the key's seqs in the chunk, ascending, each as a
// uvarint distance from the one before, the first from the seq before the
// segment's first. The first posting of every chunk and a Bloom filter of
// the keys are kept in the segment's row and in memory: a lookup of a
// trace or a ref reads one chunk of a segment, a kind's only the chunks
// from the seqs it asks for on, and none of a segment whose filter rules
// its key out.
type segment struct {
	id          int64
	class       int
	first, last int64 // the seqs of its first and last entry
	entries     int64
	postings    int64
	filter      bloom     // nil for the indexer's own listing
	firsts      []posting // the first posting of each chunk
}

// posting says the entry at seq has key.
type posting struct{ key, seq int64 }

func comparePostings(a, b posting) int {
	if c := cmp.Compare(a.key, b.key); c != 0 {
		return c
	}
	return cmp.Compare(a.seq, b.seq)
}

// sortPostings sorts ps by key, then seq, and drops repeats (two fields of
// one entry whose hashes collide).
func sortPostings(ps []posting) []posting {
	slices.SortFunc(ps, comparePostings)
	return slices.Compact(ps)
}

// mergeRuns sorts ps, made of runs each sorted by comparePostings whose
// bounds are their starts and then len(ps), by merging the runs two by
// two, with spare as scratch space. It returns the sorted postings and
// the other buffer, each either ps or spare grown to len(ps).
func mergeRuns(ps, spare []posting, bounds []int) (sorted, other []posting) {
	spare = slices.Grow(spare[:0], len(ps))[:len(ps)]
	for len(bounds) > 2 {
		var next []int
		for i := 0; i+1 < len(bounds); i += 2 {
			next = append(next, bounds[i])
			if i+2 < len(bounds) {
				merge2(spare[bounds[i]:bounds[i+2]], ps[bounds[i]:bounds[i+1]], ps[bounds[i+1]:bounds[i+2]])
			} else {
				copy(spare[bounds[i]:bounds[i+1]], ps[bounds[i]:bounds[i+1]])
			}
		}
		bounds = append(next, len(ps))
		ps, spare = spare, ps
	}
	return ps, spare
}

// merge2 merges a and b, each sorted by comparePostings, into dst.
func merge2(dst, a, b []posting) {
	i, j := 0, 0
	for k := range dst {
		if j == len(b) || (i < len(a) && (a[i].key < b[j].key || (a[i].key == b[j].key && a[i].seq < b[j].seq))) {
			dst[k] = a[i]
			i++
		} else {
			dst[k] = b[j]
			j++
		}
	}
}

const (
	// segmentFanIn is how many segments of one class are merged into
	// one: a segment of class c holds at least segmentFanIn^c entries,
	// so an entry is rewritten once per class it climbs.
	segmentFanIn = 8
	// finalClass is the class whose segments are never merged: a merge
	// into it holds at most segmentFanIn^finalClass entries' postings in
	// memory (eight segments of up to 32,767 entries), and a lookup
	// considers one more segment for every 32,768 or more entries of
	// the ledger.
	finalClass = 5
	// chunkKeys and chunkBytes bound a chunk; a single key's seqs can
	// pass chunkBytes on their own.
	chunkKeys  = 128
	chunkBytes = 8 << 10
)

// segmentClass returns the class of a segment of n entries: the whole
// part of log_segmentFanIn(n), at most finalClass. Merging segmentFanIn
// segments of class c makes one of a higher class.
func segmentClass(n int64) int {
	c := 0
	for lim := int64(segmentFanIn); c < finalClass && n >= lim; lim *= segmentFanIn {
		c++
	}
	return c
}

// chunkID returns the rowid of chunk n of the segment with id seg.
func chunkID(seg int64, n int) int64 { return seg<<32 | int64(n) }

// chunkRange returns the rowids of every chunk the segment seg can have.
func chunkRange(seg int64) (lo, hi int64) { return chunkID(seg, 0), chunkID(seg+1, 0) - 1 }

// encodeSegment encodes ps, sorted by sortPostings, the postings of the
// entries from first on, into chunks of at most perChunk keys, and
// returns the chunks, their first postings and the filter of their keys.
func encodeSegment(ps []posting, first int64, perChunk int) (chunks [][]byte, firsts []posting, filter bloom) {
	filter = newBloom(countKeys(ps))
	e := chunkEncoder{first: first, perChunk: perChunk}
	for i, p := range ps {
		newKey := i == 0 || p.key != ps[i-1].key
		if newKey {
			filter.add(p.key)
		}
		e.add(p, newKey)
	}
	e.closePiece()
	e.cut()
	return e.chunks, e.firsts, filter
}

// chunkEncoder cuts postings into chunks. The seqs of a key in one chunk
// are a piece; a key cut by a chunk boundary has a piece in each.
type chunkEncoder struct {
	first    int64
	perChunk int
	chunks   [][]byte
	firsts   []posting
	chunk    []byte // the pieces of the current chunk closed so far
	keys     int    // the pieces begun in the current chunk
	piece    []byte // the seqs of the open piece
	open     bool
	key      int64 // of the open piece
	prev     int64 // its last seq
}

func (e *chunkEncoder) add(p posting, newKey bool) {
	switch {
	case newKey:
		e.closePiece()
		if e.keys == e.perChunk || len(e.chunk) >= chunkBytes {
			e.cut()
		}
	case len(e.chunk)+len(e.piece) >= chunkBytes:
		e.closePiece()
		e.cut()
	}
	if !e.open {
		if len(e.chunk) == 0 {
			e.firsts = append(e.firsts, p)
		}
		e.open, e.key, e.prev, e.piece = true, p.key, e.first-1, e.piece[:0]
		e.keys++
	}
	e.piece = binary.AppendUvarint(e.piece, uint64(p.seq-e.prev))
	e.prev = p.seq
}

func (e *chunkEncoder) closePiece() {
	if !e.open {
		return
	}
	e.chunk = binary.BigEndian.AppendUint64(e.chunk, uint64(e.key))
	e.chunk = binary.AppendUvarint(e.chunk, uint64(len(e.piece)))
	e.chunk = append(e.chunk, e.piece...)
	e.open = false
}

func (e *chunkEncoder) cut() {
	if len(e.chunk) > 0 {
		e.chunks = append(e.chunks, e.chunk)
	}
	e.chunk, e.keys = nil, 0
}

func countKeys(ps []posting) int {
	n := 0
	for i := range ps {
		if i == 0 || ps[i].key != ps[i-1].key {
			n++
		}
	}
	return n
}

var errCorruptChunk = errors.New("index: a chunk is corrupt")

// nextKey splits the first key of a chunk off the rest.
func nextKey(chunk []byte) (key int64, seqs, rest []byte, err error) {
	if len(chunk) < 8 {
		return 0, nil, nil, errCorruptChunk
	}
	key = int64(binary.BigEndian.Uint64(chunk))
	n, w := binary.Uvarint(chunk[8:])
	if w <= 0 || n > uint64(len(chunk)-8-w) {
		return 0, nil, nil, errCorruptChunk
	}
	start := 8 + w
	return key, chunk[start : start+int(n)], chunk[start+int(n):], nil
}

// appendSeqs decodes a key's seqs, in a segment starting at first, onto
// dst.
func appendSeqs(dst []int64, b []byte, first int64) ([]int64, error) {
	return appendSeqRange(dst, b, first, seqRange{after: math.MinInt64})
}

// seqRange selects the seqs after after, at most limit of them (all
// when limit is 0).
type seqRange struct{ after, limit int64 }

// appendSeqRange decodes, as appendSeqs, the seqs r selects: a key of
// many entries (a kind) is decoded only as far as needed.
func appendSeqRange(dst []int64, b []byte, first int64, r seqRange) ([]int64, error) {
	prev, n := first-1, int64(0)
	for len(b) > 0 && (r.limit == 0 || n < r.limit) {
		var err error
		if prev, b, err = nextSeq(b, prev); err != nil {
			return dst, err
		}
		if prev > r.after {
			dst = append(dst, prev)
			n++
		}
	}
	return dst, nil
}

// nextSeq decodes the distance at the start of b from prev, the seq
// before, and returns the seq it lands on and the rest of b. A distance
// of 0, or one past the largest seq, is corrupt.
func nextSeq(b []byte, prev int64) (int64, []byte, error) {
	d, w := binary.Uvarint(b)
	if w <= 0 || d == 0 || d > uint64(math.MaxInt64-prev) {
		return prev, b, errCorruptChunk
	}
	return prev + int64(d), b[w:], nil
}

// findSeqs appends to dst the seqs of key that r selects in chunk, of a
// segment starting at first; none when the chunk does not hold key.
func findSeqs(dst []int64, chunk []byte, key, first int64, r seqRange) ([]int64, error) {
	for len(chunk) > 0 {
		k, seqs, rest, err := nextKey(chunk)
		switch {
		case err != nil:
			return dst, err
		case k == key:
			return appendSeqRange(dst, seqs, first, r)
		case k > key:
			return dst, nil
		}
		chunk = rest
	}
	return dst, nil
}

// appendPostings decodes every posting of chunk, of a segment starting at
// first, onto dst.
func appendPostings(dst []posting, chunk []byte, first int64) ([]posting, error) {
	var seqs []int64
	for len(chunk) > 0 {
		k, b, rest, err := nextKey(chunk)
		if err != nil {
			return dst, err
		}
		if seqs, err = appendSeqs(seqs[:0], b, first); err != nil {
			return dst, err
		}
		for _, s := range seqs {
			dst = append(dst, posting{k, s})
		}
		chunk = rest
	}
	return dst, nil
}

// chunksOf returns the chunks of s that may hold the seqs of key after
// after, from n to end (exclusive); none when its filter rules key out.
// The first of them may not hold key at all: its last posting is before
// (key, after+1), and the next starts with key.
func (s *segment) chunksOf(key, after int64) (n, end int) {
	if !s.filter.has(key) {
		return 0, 0
	}
	p := posting{key, after + 1}
	n = max(0, sort.Search(len(s.firsts), func(i int) bool { return comparePostings(s.firsts[i], p) > 0 })-1)
	for end = n + 1; end < len(s.firsts) && s.firsts[end].key == key; end++ {
	}
	return n, end
}

// seqs appends to dst the seqs s holds for key that r selects, reading
// with chunk only the chunks that may hold them.
func (s *segment) seqs(key int64, r seqRange, dst []int64, chunk func(n int) ([]byte, error)) ([]int64, error) {
	n, end := s.chunksOf(key, r.after)
	for ; n < end; n++ {
		c, err := chunk(n)
		if err != nil {
			return dst, err
		}
		had := len(dst)
		if dst, err = findSeqs(dst, c, key, s.first, r); err != nil {
			return dst, fmt.Errorf("segment %d: %w", s.id, err)
		}
		if r.limit > 0 {
			if r.limit -= int64(len(dst) - had); r.limit == 0 {
				break
			}
		}
	}
	return dst, nil
}

// encodeFirsts packs postings as 16 big-endian bytes each.
func encodeFirsts(ps []posting) []byte {
	b := make([]byte, 0, 16*len(ps))
	for _, p := range ps {
		b = binary.BigEndian.AppendUint64(b, uint64(p.key))
		b = binary.BigEndian.AppendUint64(b, uint64(p.seq))
	}
	return b
}

func decodeFirsts(b []byte) ([]posting, error) {
	if len(b)%16 != 0 {
		return nil, fmt.Errorf("index: a segment's chunk starts are %d bytes, not a multiple of 16", len(b))
	}
	ps := make([]posting, len(b)/16)
	for i := range ps {
		ps[i] = posting{int64(binary.BigEndian.Uint64(b[16*i:])), int64(binary.BigEndian.Uint64(b[16*i+8:]))}
	}
	return ps, nil
}

// bloom is a Bloom filter of 64-bit keys. Keys are hashes already, so
// its probes are derived from the key's two halves.
type bloom []uint64

const (
	bloomBitsPerKey = 10 // about 1% false positives with bloomProbes
	bloomProbes     = 7
)

func newBloom(keys int) bloom {
	return make(bloom, max(1, (keys*bloomBitsPerKey+63)/64))
}

func (b bloom) probes(key int64) (h, step, m uint64) {
	return uint64(uint32(key)), uint64(uint32(uint64(key)>>32)) | 1, uint64(len(b)) * 64
}

func (b bloom) add(key int64) {
	h, step, m := b.probes(key)
	for range bloomProbes {
		i := h % m
		b[i/64] |= 1 << (i % 64)
		h += step
	}
}

func (b bloom) has(key int64) bool {
	h, step, m := b.probes(key)
	for range bloomProbes {
		i := h % m
		if b[i/64]&(1<<(i%64)) == 0 {
			return false
		}
		h += step
	}
	return true
}

func (b bloom) bytes() []byte {
	out := make([]byte, 0, 8*len(b))
	for _, w := range b {
		out = binary.LittleEndian.AppendUint64(out, w)
	}
	return out
}

func decodeBloom(p []byte) (bloom, error) {
	if len(p) == 0 || len(p)%8 != 0 {
		return nil, fmt.Errorf("index: a segment's filter is %d bytes, not a positive multiple of 8", len(p))
	}
	b := make(bloom, len(p)/8)
	for i := range b {
		b[i] = binary.LittleEndian.Uint64(p[8*i:])
	}
	return b, nil
}
