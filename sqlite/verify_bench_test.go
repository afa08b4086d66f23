package sqlite

import (
	"context"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/custody-dev/custody/internal/bench"
	"github.com/custody-dev/custody/ledger"
)

// BenchmarkVerify verifies one store of CUSTODY_BENCH_VERIFY_ENTRIES
// entries (200,000 by default; 2,000,000 for the figure) filled by
// 64 writers with sample entries, taking turns b.N times between Verify
// (the chunks read on several connections) and the same verifier fed by
// one ordered query, so that both see the same machine. It reports both
// rates and their ratio. With CUSTODY_BENCH_VERIFY_DIR it keeps the store
// in that directory, filling it only when it is empty, so that a 2M-entry
// store is filled once and measured many times.
//
//	CUSTODY_BENCH_VERIFY_ENTRIES=2000000 go test ./sqlite -run '^$' -bench BenchmarkVerify -benchtime 3x -timeout 30m
func BenchmarkVerify(b *testing.B) {
	n := int64(200_000)
	if v, err := strconv.ParseInt(os.Getenv("CUSTODY_BENCH_VERIFY_ENTRIES"), 10, 64); err == nil && v > 0 {
		n = v
	}
	ctx := context.Background()
	dir := os.Getenv("CUSTODY_BENCH_VERIFY_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	db, err := Open(ctx, dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	head, err := db.Head(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if head.Seq == 0 {
		fillSample(b, db, n)
	} else {
		n = head.Seq
	}
	oneReader := func() (ledger.Report, error) {
		p := ledger.NewPager(ledger.NewStreamVerifier(db.keys...))
		if err := db.walk(ctx, p.Entry, p.Checkpoint); err != nil {
			return ledger.Report{}, err
		}
		return p.Finish()
	}
	var ahead, one time.Duration
	b.ResetTimer()
	for range b.N {
		for _, side := range []struct {
			verify func() (ledger.Report, error)
			took   *time.Duration
		}{{func() (ledger.Report, error) { return db.Verify(ctx) }, &ahead}, {oneReader, &one}} {
			start := time.Now()
			rep, err := side.verify()
			*side.took += time.Since(start)
			if err != nil || rep.Entries != n {
				b.Fatalf("verify: %v, %d entries of %d", err, rep.Entries, n)
			}
		}
	}
	total := float64(n) * float64(b.N)
	b.ReportMetric(total/ahead.Seconds(), "entries/s")
	b.ReportMetric(total/one.Seconds(), "one_reader_entries/s")
	b.ReportMetric(one.Seconds()/ahead.Seconds(), "ratio")
}

// fillSample appends n sample entries from 64 writers.
func fillSample(b *testing.B, db *DB, n int64) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range 64 {
		wg.Go(func() {
			for i := next.Add(1); i <= n; i = next.Add(1) {
				if _, err := db.Append(context.Background(), bench.SampleEntry(w, int(i))); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
