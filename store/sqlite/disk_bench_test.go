package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/custody-dev/custody/internal/bench"
)

// BenchmarkDiskPerEntry appends b.N entries shaped like governed calls
// (bench.SampleEntry) from 64 writers, closes the store, which checkpoints the
// write-ahead log into the database file, and reports the file's size and
// the entries table's own pages per entry. Run it with a fixed count:
//
//	go test ./sqlite -run '^$' -bench DiskPerEntry -benchtime 100000x
func BenchmarkDiskPerEntry(b *testing.B) {
	dir := b.TempDir()
	db, err := Open(context.Background(), dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range 64 {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				if _, err := db.Append(context.Background(), bench.SampleEntry(w, int(i))); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	fi, err := os.Stat(filepath.Join(dir, DatabaseFile))
	if err != nil {
		b.Fatal(err)
	}
	var table int64
	raw := openRaw(b, dir)
	if err := raw.QueryRow(`SELECT sum(pgsize) FROM dbstat WHERE name = 'entries'`).Scan(&table); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(fi.Size())/float64(b.N), "file_B/entry")
	b.ReportMetric(float64(table)/float64(b.N), "table_B/entry")
}
