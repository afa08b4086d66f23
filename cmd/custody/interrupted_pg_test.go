package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/lockedbuf"
	"github.com/custody-dev/custody/store/postgres"
	"github.com/custody-dev/custody/store/postgres/pgtest"
)

// leaseEpoch is when the instances of these tests start, by their clocks.
var leaseEpoch = time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC)

// pgInstance opens an instance on the store at url whose clock reads at,
// with hour-long heartbeats: its lease lasts three hours of its clock and
// no heartbeat ticks while a test runs, so that only the clocks the test
// sets say who is alive.
func pgInstance(t *testing.T, url, key string, at time.Time) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), url, postgres.Options{KeyFile: key, Heartbeat: time.Hour, Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// appendCalls appends n calls of trace prefix as the gateway writes them, a
// call.started each, and the outcome of every finished one; it returns
// the seqs of the intents left open.
func appendCalls(t *testing.T, db *postgres.DB, prefix string, n int, finished func(i int) bool) []int64 {
	t.Helper()
	ctx := context.Background()
	var open []int64
	for i := range n {
		args := fmt.Sprintf(`{"tool":"hang_note","arguments":{"n":%d}`, i)
		e := custody.Entry{Kind: custody.KindCallStarted, Trace: fmt.Sprint(prefix, i), Actor: "agent", Body: json.RawMessage(args + "}")}
		started, err := db.Append(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		if !finished(i) {
			open = append(open, started.Seq)
			continue
		}
		e.Kind, e.Body = custody.KindCallSucceeded, json.RawMessage(args+`,"output":{},"elapsed_us":1}`)
		if _, err := db.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	return open
}

// closedOn returns how many call.interrupted entries close each intent.
func closedOn(t *testing.T, db *postgres.DB) map[int64]int {
	t.Helper()
	es, err := db.Entries(context.Background(), custody.Query{Kind: custody.KindCallInterrupted, Limit: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]int{}
	for _, e := range es {
		seq, err := strconv.ParseInt(e.Refs[refIntentSeq], 10, 64)
		if err != nil {
			t.Fatalf("call.interrupted %d names no intent: %v", e.Seq, e.Refs)
		}
		out[seq]++
	}
	return out
}

// closePass runs closeOrphans on db as watchOrphans does.
func closePass(t *testing.T, db *postgres.DB) []custody.Entry {
	t.Helper()
	ctx := context.Background()
	expired, err := db.Expired(ctx)
	if err != nil {
		t.Fatal(err)
	}
	closed, err := closeOrphans(ctx, db, expired, func() string { return custody.FormatTime(leaseEpoch) })
	if err != nil {
		t.Fatal(err)
	}
	return closed
}

// TestInterruptedOrphansClosedOnce: a dead instance's open intents, and only they,
// are closed by a live instance, once; a live instance's open intents
// stay open however often the others look, until its lease ends; the
// next pass adds none, and the dead instance's lease is forgotten.
func TestInterruptedOrphansClosedOnce(t *testing.T) {
	url, key := pgtest.URL(t), filepath.Join(t.TempDir(), "signing.key")
	dead := pgInstance(t, url, key, leaseEpoch)
	deadOpen := appendCalls(t, dead, "dead-", 6, func(i int) bool { return i%2 == 0 })
	later := leaseEpoch.Add(dead.Lease())
	live := pgInstance(t, url, key, later)
	liveOpen := appendCalls(t, live, "live-", 3, func(i int) bool { return i == 0 })

	closer := pgInstance(t, url, key, later)
	closed := closePass(t, closer)
	var got []int64
	for _, e := range closed {
		seq, _ := strconv.ParseInt(e.Refs[refIntentSeq], 10, 64)
		got = append(got, seq)
		if e.Refs[postgres.RefInstance] != dead.Instance() || e.Kind != custody.KindCallInterrupted {
			t.Errorf("%s refs %v: want the dead instance %s named", e.Kind, e.Refs, dead.Instance())
		}
	}
	if !slices.Equal(got, deadOpen) {
		t.Fatalf("closed the intents %v, want the dead instance's open ones %v", got, deadOpen)
	}
	if expired, err := closer.Expired(context.Background()); err != nil || len(expired) != 0 {
		t.Fatalf("Expired after the pass = %v, %v: want the dead lease forgotten", expired, err)
	}
	// The live instance itself, and another just before its lease ends,
	// close nothing more.
	for _, db := range []*postgres.DB{live, pgInstance(t, url, key, later.Add(live.Lease()-time.Second))} {
		if again := closePass(t, db); len(again) != 0 {
			t.Fatalf("a second pass closed %d more intents", len(again))
		}
	}
	counts := closedOn(t, closer)
	for _, seq := range liveOpen {
		if counts[seq] != 0 {
			t.Fatalf("the live instance's open intent %d was closed", seq)
		}
	}
	if len(counts) != len(deadOpen) {
		t.Fatalf("intents closed %v, want %v once each", counts, deadOpen)
	}
	// Once the live instance's lease ends, its open intents are closed.
	if closed := closePass(t, pgInstance(t, url, key, later.Add(live.Lease()))); len(closed) != len(liveOpen) {
		t.Fatalf("after the live lease ended: closed %d, want %d", len(closed), len(liveOpen))
	}
}

// TestInterruptedClosersAtOnce: instances that close a dead instance's intents at
// the same time close each once, whichever way their passes interleave:
// two that both found the same intents open add them once between them.
func TestInterruptedClosersAtOnce(t *testing.T) {
	url, key := pgtest.URL(t), filepath.Join(t.TempDir(), "signing.key")
	dead := pgInstance(t, url, key, leaseEpoch)
	open := appendCalls(t, dead, "dead-", 40, func(i int) bool { return i%4 == 0 })
	later := leaseEpoch.Add(dead.Lease())
	closers := []*postgres.DB{pgInstance(t, url, key, later), pgInstance(t, url, key, later), pgInstance(t, url, key, later)}

	// Both found every intent open before either closed one.
	ctx := context.Background()
	var found [][]custody.Entry
	for _, c := range closers[:2] {
		in, err := orphans(ctx, c)
		if err != nil || len(in) != len(open) {
			t.Fatalf("orphans = %d, %v; want %d", len(in), err, len(open))
		}
		found = append(found, in)
	}
	now := func() string { return custody.FormatTime(later) }
	first, err := closeIntents(ctx, closers[0], found[0][:25], now)
	if err != nil || len(first) != 25 {
		t.Fatalf("first closer: %d, %v", len(first), err)
	}
	second, err := closeIntents(ctx, closers[1], found[1], now)
	if err != nil || len(second) != len(open)-25 {
		t.Fatalf("second closer closed %d, %v; want the %d the first left", len(second), err, len(open)-25)
	}

	// Three closers at once on intents no one closed yet.
	more := appendCalls(t, pgInstance(t, url, key, leaseEpoch), "dead2-", 40, func(i int) bool { return i%3 == 0 })
	start := make(chan struct{})
	var wg sync.WaitGroup
	totals := make([]int, len(closers))
	for i, c := range closers {
		wg.Go(func() {
			<-start
			closed, err := closeOrphans(ctx, c, nil, now)
			if err != nil {
				t.Error(err)
			}
			totals[i] = len(closed)
		})
	}
	close(start)
	wg.Wait()
	if sum := totals[0] + totals[1] + totals[2]; sum != len(more) {
		t.Fatalf("the closers at once closed %v, %d in all, want %d", totals, sum, len(more))
	}
	counts := closedOn(t, closers[0])
	for _, seq := range slices.Concat(open, more) {
		if counts[seq] != 1 {
			t.Fatalf("intent %d closed %d times, want once: %v", seq, counts[seq], counts)
		}
	}
	if len(counts) != len(open)+len(more) {
		t.Fatalf("%d intents closed, want %d", len(counts), len(open)+len(more))
	}
	if rep, err := closers[2].Verify(ctx); err != nil || rep.Entries == 0 {
		t.Fatalf("Verify = %+v, %v", rep, err)
	}
}

// TestServeClosesInterruptedCallsPostgres: the real gateway on a
// PostgreSQL store leaves calls hung as its process dies, its lease left
// behind and expired; another instance runs calls of its own meanwhile.
// The next start of serve closes the dead instance's hung calls, not the
// live one's; the start after adds none; `custody ledger show --store
// URL --interrupted` lists them.
func TestServeClosesInterruptedCallsPostgres(t *testing.T) {
	const hung = 2
	url, dir := pgtest.URL(t), t.TempDir()
	env := scaledEnv(url, dir)
	data := filepath.Join(dir, "data")
	seqs := crashedCallsIn(t, env, data, hung)
	es, err := entriesAt(t, url, seqs)
	if err != nil {
		t.Fatal(err)
	}
	instance := es[0].Refs[postgres.RefInstance]
	for _, e := range es {
		if e.Refs[postgres.RefInstance] != instance || instance == "" {
			t.Fatalf("intent %d refs %v: want the crashed instance named", e.Seq, e.Refs)
		}
	}
	// A killed process leaves its lease behind, to expire.
	pgtest.Exec(t, url, `INSERT INTO instance_leases (instance, started_at, expires_at) VALUES ($1, now() - interval '1 hour', now() - interval '1 minute')`, instance)
	live := pgInstance(t, url, env["CUSTODY_SIGNING_KEY"], time.Now())
	liveOpen := appendCalls(t, live, "live-", 2, func(int) bool { return false })

	for run, want := range []int{hung, 0} {
		log := &lockedbuf.Buffer{}
		_, _, stop := startServeLogged(t, log, env, "--data", data, "--store", url)
		waitLog(t, log, `msg="interrupted calls closed" count=`+strconv.Itoa(want)+" ")
		if code := stop(); code != exitOK {
			t.Fatalf("run %d: serve exited %d:\n%s", run, code, log)
		}
	}
	wantInterrupted(t, showInterrupted(t, "--store", url), seqs)
	if counts := closedOn(t, live); counts[liveOpen[0]]+counts[liveOpen[1]] != 0 {
		t.Fatalf("the live instance's calls were closed: %v", counts)
	}
	if n := pgtest.QueryInt(t, url, `SELECT count(*) FROM instance_leases WHERE instance = $1`, instance); n != 0 {
		t.Fatalf("the dead instance's lease is still kept after its calls were closed")
	}
	code, out, _ := runMain(t, nil, "", "ledger", "show", "--store", url, "--interrupted")
	if code != exitOK || strings.Count(out, custody.KindCallInterrupted) != hung {
		t.Fatalf("ledger show --store --interrupted: exit %d:\n%s", code, out)
	}
	if code, out, errOut := runMain(t, nil, "", "ledger", "verify", "--store", url); code != exitOK {
		t.Fatalf("ledger verify --store: exit %d: %s %s", code, out, errOut)
	}
}

// entriesAt reads the entries at seqs from the store at url.
func entriesAt(t *testing.T, url string, seqs []int64) ([]custody.Entry, error) {
	t.Helper()
	db, err := postgres.Open(context.Background(), url, postgres.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var out []custody.Entry
	for _, seq := range seqs {
		es, err := db.Entries(context.Background(), custody.Query{After: seq - 1, Limit: 1})
		if err != nil {
			return nil, err
		}
		out = append(out, es...)
	}
	if len(out) != len(seqs) {
		return nil, fmt.Errorf("read %d entries, want %d", len(out), len(seqs))
	}
	return out, nil
}
