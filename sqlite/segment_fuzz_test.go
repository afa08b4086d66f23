package sqlite

import (
	"slices"
	"testing"
)

// FuzzChunk decodes arbitrary bytes as a chunk: an error or postings,
// never a panic, and never a seq before the segment's first.
func FuzzChunk(f *testing.F) {
	chunks, _, _ := encodeSegment([]posting{{-3, 10}, {5, 10}, {5, 12}, {9, 11}}, 10, 8)
	f.Add(chunks[0], int64(5), int64(10), int64(0), int64(0))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 5, 0xff, 0xff, 0xff, 0xff, 0x0f}, int64(5), int64(1), int64(0), int64(2))
	f.Fuzz(func(t *testing.T, chunk []byte, key, first, after, limit int64) {
		first = max(1, first%(1<<40))
		ps, err := appendPostings(nil, chunk, first)
		if err == nil {
			for _, p := range ps {
				if p.seq < first {
					t.Fatalf("seq %d before the segment's first %d", p.seq, first)
				}
			}
		}
		seqs, err := findSeqs(nil, chunk, key, first, seqRange{after: after, limit: max(0, limit%100)})
		if err == nil && !slices.IsSorted(seqs) {
			t.Fatalf("seqs out of order: %v", seqs)
		}
	})
}

// FuzzSegment encodes postings made of the input, in chunks of the size
// it names, and finds every key's seqs again, from any seq and with any
// limit.
func FuzzSegment(f *testing.F) {
	f.Add([]byte("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a"), uint8(3), int64(2), uint8(0))
	f.Add(make([]byte, 4000), uint8(1), int64(0), uint8(5))
	f.Fuzz(func(t *testing.T, data []byte, perChunk uint8, after int64, limit uint8) {
		const first = 100
		var ps []posting
		for i := 0; i+1 < len(data); i += 2 {
			// Few distinct keys, so that some have long lists; seqs
			// ascending, as an update's are.
			key := int64(data[i]%16) << 59
			ps = append(ps, posting{key, first + int64(i/2) + int64(data[i+1]%2)})
		}
		ps = sortPostings(ps)
		if len(ps) == 0 {
			return
		}
		chunks, firsts, filter := encodeSegment(ps, first, max(1, int(perChunk)))
		if !slices.Equal(decodeChunks(t, chunks, first), ps) {
			t.Fatal("the chunks do not decode to the postings encoded")
		}
		s := &segment{first: first, filter: filter, firsts: firsts}
		r := seqRange{after: after, limit: int64(limit % 8)}
		for k := range int64(16) {
			key := k << 59
			var want []int64
			for _, p := range ps {
				if p.key == key && p.seq > r.after && (r.limit == 0 || int64(len(want)) < r.limit) {
					want = append(want, p.seq)
				}
			}
			got, err := s.seqs(key, r, nil, func(n int) ([]byte, error) { return chunks[n], nil })
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("key %d, %+v: %v, %v; want %v", key, r, got, err, want)
			}
		}
	})
}
