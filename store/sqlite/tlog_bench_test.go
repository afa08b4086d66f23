package sqlite

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/bench"
)

// BenchmarkAppendTree measures durable appends with the Merkle tree and
// its notes kept at every checkpoint (the default, every 1024 entries)
// and, on a second store in the same run, without them, and reports the
// ratio of the two rates: the tree's cost on the append path. The two
// stores take turns in rounds of b.N/treeRounds appends, so that a
// change in the machine's load falls on both. The control runs two stores
// without the tree the same way: how far its ratio strays from 1 is the
// noise of the run. Run it with enough appends to cross many checkpoints
// in each round: -benchtime=40000x.
func BenchmarkAppendTree(b *testing.B) {
	for _, c := range []struct {
		name    string
		writers int
		tree    bool
	}{{"writers=16", 16, true}, {"writers=64", 64, true}, {"control/writers=64", 64, false}} {
		b.Run(c.name, func(b *testing.B) {
			writers := c.writers
			stores := [2]*DB{openTest(b, Options{noTree: !c.tree}), openTest(b, Options{noTree: true})}
			var took [2]time.Duration
			n := max(b.N/treeRounds, 1)
			for round := range treeRounds {
				for k := range 2 {
					i := (k + round) % 2 // who goes first alternates
					took[i] += appendRound(b, stores[i], writers, n)
				}
			}
			with, without := float64(n*treeRounds)/took[0].Seconds(), float64(n*treeRounds)/took[1].Seconds()
			b.ReportMetric(with, "appends/s")
			b.ReportMetric(without, "no_tree_appends/s")
			b.ReportMetric(with/without, "ratio")
		})
	}
}

// treeRounds is how many turns each store takes in BenchmarkAppendTree.
const treeRounds = 10

// appendRound appends n entries to db from writers goroutines and returns
// how long they took.
func appendRound(b *testing.B, db *DB, writers, n int) time.Duration {
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := range writers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if _, err := db.Append(context.Background(), bench.SampleEntry(w, int(next.Load()))); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

// BenchmarkReceipt measures serving an entry's inclusion proof (what GET
// /v1/ledger/proof answers) from a ledger of one million entries under
// one checkpoint, for entries spread over the whole ledger, and reports
// the 50th and 99th percentile of one proof's time. The fixture's entries
// are written directly, with made-up hashes: a proof reads only their
// hashes, the tree's nodes and the note.
func BenchmarkReceipt(b *testing.B) {
	const size = 1 << 20
	db := receiptFixture(b, size)
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	for i := uint64(0); b.Loop(); i++ {
		seq := (i*7919)%size + 1
		start := time.Now()
		r, err := db.Receipt(ctx, seq, 0)
		lat = append(lat, time.Since(start))
		if err != nil || r.Size != size {
			b.Fatalf("receipt of %d: %v", seq, err)
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50_µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99_µs")
}

// receiptFixture writes size entries and one checkpoint of them, with its
// tree and note, and returns a DB that serves reads from it.
func receiptFixture(b *testing.B, size int) *DB {
	b.Helper()
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), DatabaseFile)
	wdb, err := openWriteDB(ctx, path, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	defer wdb.Close()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	w := &writer{priv: priv, opts: Options{Origin: "custody/ledger/bench"}}
	tx, err := wdb.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback()
	const rows = 64 // divides size
	q := `INSERT INTO entries (seq, at, kind, trace, actor, refs, body, body_sha256, hash) VALUES ` +
		strings.TrimSuffix(strings.Repeat("(?, '', 'k', '', '', '{}', '{}', zeroblob(32), ?), ", rows), ", ")
	hash := make([]byte, 32)
	var last string
	for seq := 1; seq <= size; seq += rows {
		args := make([]any, 0, 2*rows)
		for i := range rows {
			rand.Read(hash)
			last = hex.EncodeToString(hash)
			args = append(args, seq+i, slices.Clone(hash))
		}
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			b.Fatal(err)
		}
	}
	cp := custody.Checkpoint{Size: int64(size), Head: last}
	if err := w.sealNote(ctx, tx, cp, nil); err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	// As a long-running store's would be, the log is checkpointed into
	// the database file.
	if _, err := wdb.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatal(err)
	}
	rdb, err := openReadDB(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rdb.Close() })
	return &DB{rdb: rdb, opts: w.opts}
}
