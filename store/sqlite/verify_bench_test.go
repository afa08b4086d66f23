package sqlite

import (
	"context"
	"database/sql/driver"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/custody-dev/custody"
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
	rate := total / ahead.Seconds()
	b.ReportMetric(rate, "entries/s")
	b.ReportMetric(total/one.Seconds(), "one_reader_entries/s")
	b.ReportMetric(one.Seconds()/ahead.Seconds(), "ratio")
	b.StopTimer()
	// The floor: reading the rows with no decoding at all, and hashing
	// entries already in memory, each on every CPU. Verify does both on
	// the same CPUs, so it can go no faster than the two back to back.
	read, hash := rawReadRate(b, db, n), hashRate(b, db)
	floor := 1 / (1/read + 1/hash)
	b.ReportMetric(read, "floor_read_rows/s")
	b.ReportMetric(hash, "floor_hash_entries/s")
	b.ReportMetric(floor, "floor_entries/s")
	b.ReportMetric(rate/floor, "ratio_to_floor")
}

// rawReadRate reads the n rows of the store's entries as the driver gives
// them (rawRows, as verify reads them), decoding nothing, in chunks on as many connections as Verify
// uses, and returns rows per second.
func rawReadRate(b *testing.B, db *DB, n int64) float64 {
	ctx := context.Background()
	rdb, err := openReadDB(filepath.Join(db.dir, DatabaseFile))
	if err != nil {
		b.Fatal(err)
	}
	defer rdb.Close()
	var next atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range aheadReaders() {
		wg.Go(func() {
			conn, err := rdb.Conn(ctx)
			if err != nil {
				b.Error(err)
				return
			}
			defer conn.Close()
			for lo := next.Add(readAheadChunk) - readAheadChunk; lo < n; lo = next.Add(readAheadChunk) - readAheadChunk {
				err := rawRows(ctx, conn, lo, lo+readAheadChunk, func([]driver.Value) error { return nil })
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}

// hashRate verifies up to 200,000 of the store's entries, held in memory,
// a page at a time on every CPU, and returns entries per second.
func hashRate(b *testing.B, db *DB) float64 {
	var es []custody.Entry
	err := db.walk(context.Background(), func(e *custody.Entry) error {
		if len(es) < 200_000 {
			es = append(es, *e)
		}
		return nil
	}, func(custody.Checkpoint) error { return nil })
	if err != nil {
		b.Fatal(err)
	}
	var took time.Duration
	for range 3 {
		v := ledger.NewStreamVerifier()
		start := time.Now()
		for lo := 0; lo < len(es); lo += ledger.PageSize {
			if err := v.Entries(es[lo:min(lo+ledger.PageSize, len(es))]); err != nil {
				b.Fatal(err)
			}
		}
		took += time.Since(start)
	}
	return 3 * float64(len(es)) / took.Seconds()
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
