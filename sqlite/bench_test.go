package sqlite

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/custody-dev/custody"
)

// BenchmarkAppend measures durable appends from 1, 8 and 64 concurrent
// writers. Right after each measurement it runs RawGroupCommitBaseline
// with as many writers for as long, so that both see the same machine,
// and reports appends/s, baseline_inserts/s, their ratio and how many
// appends shared a commit on average.
func BenchmarkAppend(b *testing.B) {
	for _, writers := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			elapsed, batches := benchAppend(b, writers)
			rate := float64(b.N) / elapsed.Seconds()
			d := min(max(elapsed, 200*time.Millisecond), 5*time.Second)
			baseline, err := RawGroupCommitBaseline(context.Background(), b.TempDir(), writers, d)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(rate, "appends/s")
			b.ReportMetric(baseline, "baseline_inserts/s")
			b.ReportMetric(rate/baseline, "ratio")
			b.ReportMetric(float64(b.N)/float64(batches), "appends/commit")
		})
	}
}

// benchAppend spreads b.N appends over writers goroutines and returns how
// long they took and in how many commits.
func benchAppend(b *testing.B, writers int) (time.Duration, int64) {
	db := openTest(b, Options{})
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for w := range writers {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				if _, err := db.Append(context.Background(), SampleEntry(w, int(i))); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	return elapsed, db.Commits()
}

// BenchmarkIndex measures what indexing costs per entry, in updates of
// indexBatch entries shaped like SampleEntry's, on an index that already
// holds the postings of a ledger of the given size: hashed keys scatter
// new postings, so the cost would grow with the ledger if nothing kept
// the writes together.
func BenchmarkIndex(b *testing.B) {
	for _, size := range []int{0, 1 << 20} {
		b.Run(fmt.Sprintf("ledger=%d", size), func(b *testing.B) {
			ctx := context.Background()
			main, lk, _ := openIndex(b, Options{})
			var seq int64
			index := func(n int) {
				for n > 0 {
					rows := make([]indexRow, min(n, indexBatch))
					for i := range rows {
						seq++
						e := SampleEntry(int(seq%64), int(seq))
						e.Seq = seq
						rows[i] = rowOf(&e)
					}
					if err := lk.update(ctx, main, rows); err != nil {
						b.Fatal(err)
					}
					n -= len(rows)
				}
			}
			index(size)
			settleMerges(b, lk)
			b.ResetTimer()
			index(b.N)
			// The merges run on their own goroutine: their time counts.
			settleMerges(b, lk)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entries/s")
		})
	}
}

// BenchmarkLookup measures the index's part of the lookups on the call
// path (a custody link: trace, kind and ref; an approval: trace and ref)
// and of a ledger query by kind, on indexes of 262,144 and 4,194,304
// entries indexed in updates of indexBatch: chains of four entries, two
// kinds, a ref each.
func BenchmarkLookup(b *testing.B) {
	for _, size := range []int64{1 << 18, 1 << 22} {
		b.Run(fmt.Sprintf("ledger=%d", size), func(b *testing.B) { benchmarkLookup(b, size) })
	}
}

func benchmarkLookup(b *testing.B, size int64) {
	ctx := context.Background()
	main, lk, _ := openIndex(b, Options{})
	row := func(seq int64) indexRow {
		return indexRow{seq: seq, trace: fmt.Sprint("chain-", seq/4), kind: fmt.Sprint("kind-", seq%2),
			refs: []string{"id", fmt.Sprint("id-", seq)}}
	}
	for seq := int64(1); seq <= size; {
		rows := make([]indexRow, 0, indexBatch)
		for ; len(rows) < indexBatch && seq <= size; seq++ {
			rows = append(rows, row(seq))
		}
		if err := lk.update(ctx, main, rows); err != nil {
			b.Fatal(err)
		}
	}
	settleMerges(b, lk)
	queries := map[string]func(seq int64) custody.Query{
		"link": func(seq int64) custody.Query {
			r := row(seq)
			return custody.Query{Trace: r.trace, Kind: r.kind, Refs: map[string]string{"id": r.refs[1]}, Limit: 1}
		},
		"approval": func(seq int64) custody.Query {
			r := row(seq)
			return custody.Query{Trace: r.trace, Refs: map[string]string{"id": r.refs[1]}, Limit: 1}
		},
		"kind": func(seq int64) custody.Query { return custody.Query{Kind: row(seq).kind, After: seq, Limit: 100} },
	}
	for _, name := range []string{"link", "approval", "kind"} {
		b.Run(name, func(b *testing.B) {
			for i := int64(0); b.Loop(); i++ {
				seq := (i*7919)%size + 1
				got, err := lk.seqs(ctx, queries[name](seq))
				if err != nil || len(got) == 0 {
					b.Fatalf("%s at %d: %v, %v", name, seq, got, err)
				}
			}
		})
	}
}
