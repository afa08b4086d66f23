package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/queue"
)

// baselineFile is the scratch database of RawGroupCommit.
const baselineFile = "raw-baseline.db"

// RawSync is how RawGroupCommit makes its commits durable.
type RawSync int

const (
	// RawSyncFull lets SQLite fsync the log at every commit
	// (synchronous=FULL): a row is acknowledged once its commit returns.
	// It is what SQLite alone does, and the default bar.
	RawSyncFull RawSync = iota
	// RawSyncPipelined commits the way the store does: with
	// synchronous=NORMAL, the log fsynced by a second goroutine while the
	// next batch inserts, a row acknowledged once an fsync that began
	// after its commit returns.
	RawSyncPipelined
)

// String names the mode as the bench command's flag does.
func (m RawSync) String() string {
	if m == RawSyncPipelined {
		return "pipelined"
	}
	return "full"
}

// RawGroupCommit runs load against what the database alone can do. It
// opens a scratch database in dir with the store's schema, settings (WAL;
// synchronous as mode says), prepared statements and group-commit writer,
// and hands load a RawGroup whose Insert puts a row shaped like an entry
// on it and returns once the row is durable, with no validation, sealing,
// hashing or indexing: the bar an append path is measured against. The
// scratch database is removed afterwards.
func RawGroupCommit(ctx context.Context, dir string, mode RawSync, load func(g *RawGroup) error) error {
	path := filepath.Join(dir, baselineFile)
	defer removeDatabase(path)
	removeDatabase(path)
	pragma := syncFull
	if mode == RawSyncPipelined {
		pragma = syncNormal
	}
	conn, err := openWriteDB(ctx, path, time.Now(), pragma)
	if err != nil {
		return err
	}
	defer conn.Close()
	stmts, err := prepareInserts(ctx, conn)
	if err != nil {
		return err
	}
	defer stmts.close()

	reqs := make(chan *rawInsert, queueSize)
	g := &RawGroup{ctx: ctx, reqs: reqs}
	var loop sync.WaitGroup
	if mode == RawSyncPipelined {
		g.sync = newSyncer[[]*rawInsert](path, nil, nil)
		defer g.sync.close()
		loop.Go(func() { g.sync.run(g.durable) })
	}
	loop.Go(func() { g.write(conn, stmts, reqs) })
	defer loop.Wait()
	defer close(reqs)
	return load(g)
}

// RawGroup is the raw group commit that RawGroupCommit hands its load.
// It is safe for concurrent use until the load returns.
type RawGroup struct {
	ctx           context.Context
	reqs          chan<- *rawInsert
	rows, commits atomic.Int64
	// sync acknowledges the committed batches when pipelined; nil when
	// each commit syncs.
	sync *syncer[[]*rawInsert]
}

// Insert puts a row shaped like e on the scratch database and returns
// once it is durable.
func (g *RawGroup) Insert(e custody.Entry) error {
	r := &rawInsert{e: e, done: make(chan struct{})}
	select {
	case g.reqs <- r:
	case <-g.ctx.Done():
		return g.ctx.Err()
	}
	<-r.done
	return r.err
}

// Committed returns how many rows the raw writer has committed, in how
// many transactions: rows over commits is how many shared each fsync.
func (g *RawGroup) Committed() (rows, commits int64) {
	return g.rows.Load(), g.commits.Load()
}

// RawGroupCommitBaseline runs RawGroupCommit with writers goroutines
// inserting SampleEntry rows flat out for d, and returns acknowledged
// inserts per second.
func RawGroupCommitBaseline(ctx context.Context, dir string, writers int, d time.Duration) (insertsPerSec float64, err error) {
	if writers < 1 || d <= 0 {
		return 0, custody.Errorf(custody.EINVALID, "baseline: want at least one writer and a positive duration")
	}
	var n int64
	err = RawGroupCommit(ctx, dir, RawSyncFull, func(g *RawGroup) error {
		var err error
		n, err = rawLoad(ctx, g.Insert, writers, d)
		return err
	})
	if err != nil {
		return 0, err
	}
	return float64(n) / d.Seconds(), nil
}

// rawInsert is one row waiting for the raw writer.
type rawInsert struct {
	e    custody.Entry
	err  error
	done chan struct{}
}

// rawLoad runs writers goroutines that insert until d has passed and
// returns how many inserts were acknowledged.
func rawLoad(ctx context.Context, insert func(custody.Entry) error, writers int, d time.Duration) (int64, error) {
	var n atomic.Int64
	var first error
	var once sync.Once
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := 0; time.Now().Before(stop) && ctx.Err() == nil; i++ {
				if err := insert(SampleEntry(w, i)); err != nil {
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

// write is the writer loop of DB without the ledger: drain, insert,
// commit, acknowledge (or, pipelined, hand the batch to the syncer).
func (g *RawGroup) write(conn *sql.DB, stmts *insertStmts, reqs <-chan *rawInsert) {
	if g.sync != nil {
		defer close(g.sync.queue)
	}
	var seq int64
	fill := strings.Repeat("0", 64)
	taken := make([]*rawInsert, 0, maxBatch)
	entries := make([]*custody.Entry, 0, maxBatch)
	for r := range reqs {
		taken = queue.Gather(append(taken[:0], r), reqs, maxBatch)
		entries = entries[:0]
		for _, r := range taken {
			seq++
			r.e.Seq, r.e.Prev, r.e.Hash, r.e.BodySHA256 = seq, fill, fill, fill
			entries = append(entries, &r.e)
		}
		err := rawCommit(g.ctx, conn, stmts, entries)
		if err == nil && g.sync != nil {
			g.sync.queue <- slices.Clone(taken)
			continue
		}
		g.durable([][]*rawInsert{taken}, err)
	}
}

// durable acknowledges committed batches once they are durable, or fails
// them with err.
func (g *RawGroup) durable(batches [][]*rawInsert, err error) {
	for _, b := range batches {
		if err == nil {
			g.rows.Add(int64(len(b)))
			g.commits.Add(1)
		}
		for _, r := range b {
			r.err = err
			close(r.done)
		}
	}
}

func rawCommit(ctx context.Context, conn *sql.DB, stmts *insertStmts, entries []*custody.Entry) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	if err := stmts.insert(ctx, tx, entries); err != nil {
		tx.Rollback()
		return fmt.Errorf("baseline: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	return nil
}

// SampleEntry returns the entry the benchmarks append for writer w's i-th
// call: the size and shape of a typical call.succeeded record, with one
// ref. The same entry feeds RawGroupCommitBaseline, so that both sides of
// a comparison write the same bytes.
func SampleEntry(w, i int) custody.Entry {
	// strconv rather than fmt: the load generator's own cost is paid by
	// both sides of a comparison on the same two cores.
	ws, is := strconv.Itoa(w), strconv.Itoa(i)
	body := make([]byte, 0, 192)
	body = append(body, `{"tool":"vms.update","arguments":{"sign_id":"A1-`...)
	body = append(body, ws...)
	body = append(body, `","message":"SLOW DOWN - CRASH AHEAD","speed_kph":60},"output":{"vms_update_id":"u-`...)
	body = append(append(append(body, ws...), '-'), is...)
	body = append(body, `","status":"displayed"},"elapsed_ms":`...)
	body = strconv.AppendInt(body, int64(i%997), 10)
	body = append(body, '}')
	return custody.Entry{
		At:    "2026-01-02T03:04:05.000000Z",
		Kind:  custody.KindCallSucceeded,
		Trace: "trace-" + ws,
		Actor: "agent-1",
		Refs:  map[string]string{"approval_request_id": "ap-" + ws + "-" + is},
		Body:  body,
	}
}

func removeDatabase(path string) {
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(path + suffix)
	}
}
