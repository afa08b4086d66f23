package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/bench"
	"github.com/custody-dev/custody/internal/bench/rawsqlite"
	"github.com/custody-dev/custody/store/sqlite"
)

// BenchmarkAppend measures durable appends from 1, 8 and 64 concurrent
// writers. Right after each measurement it runs the raw SQLite baseline
// (rawsqlite.GroupCommit) with as many writers for as long, so that both see the same machine,
// and reports appends/s, baseline_inserts/s, their ratio and how many
// appends shared a commit on average.
func BenchmarkAppend(b *testing.B) {
	for _, writers := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			elapsed, batches := benchAppend(b, writers)
			rate := float64(b.N) / elapsed.Seconds()
			d := min(max(elapsed, 200*time.Millisecond), 5*time.Second)
			baseline, err := rawBaseline(context.Background(), b.TempDir(), writers, d)
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

// rawBaseline runs rawsqlite.GroupCommit with writers goroutines
// inserting bench.SampleEntry rows flat out for d, and returns
// acknowledged inserts per second.
func rawBaseline(ctx context.Context, dir string, writers int, d time.Duration) (insertsPerSec float64, err error) {
	var n int64
	err = rawsqlite.GroupCommit(ctx, dir, rawsqlite.SyncFull, func(g *rawsqlite.Group) error {
		var err error
		n, err = flatOut(ctx, g.Insert, writers, d)
		return err
	})
	if err != nil {
		return 0, err
	}
	return float64(n) / d.Seconds(), nil
}

// flatOut runs writers goroutines that insert until d has passed and
// returns how many inserts were acknowledged.
func flatOut(ctx context.Context, insert func(custody.Entry) error, writers int, d time.Duration) (int64, error) {
	var n atomic.Int64
	var first error
	var once sync.Once
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := 0; time.Now().Before(stop) && ctx.Err() == nil; i++ {
				if err := insert(bench.SampleEntry(w, i)); err != nil {
					once.Do(func() { first = err })
					return
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	return n.Load(), errors.Join(first, ctx.Err())
}

// benchAppend spreads b.N appends over writers goroutines and returns how
// long they took and in how many commits.
func benchAppend(b *testing.B, writers int) (time.Duration, int64) {
	db, err := sqlite.Open(context.Background(), b.TempDir(), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
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
				if _, err := db.Append(context.Background(), bench.SampleEntry(w, int(i))); err != nil {
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
