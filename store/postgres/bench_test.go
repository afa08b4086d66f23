package postgres

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/custody-dev/custody/store/postgres/pgtest"
)

// BenchmarkAppend measures durable appends from 64 concurrent writers on
// a fresh schema:
//
//	CUSTODY_TEST_POSTGRES_URL=... go test -run '^$' -bench Append ./store/postgres/
func BenchmarkAppend(b *testing.B) {
	pgtest.Require(b)
	db, err := Open(context.Background(), pgtest.URL(b), Options{KeyFile: filepath.Join(b.TempDir(), "signing.key")})
	if err != nil {
		b.Fatalf("Open: %v", err)
	}
	defer db.Close()
	const writers = 64
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	for w := range writers {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				if _, err := db.Append(context.Background(), entry("bench.kind", fmt.Sprint("w", w))); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
}
