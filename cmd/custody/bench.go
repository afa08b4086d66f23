package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/example"
	"github.com/custody-dev/custody/internal/bench"
	"github.com/custody-dev/custody/internal/bench/rawsqlite"
)

// benchResult is the last line `custody bench gateway` prints.
type benchResult struct {
	CallsPerS    float64 `json:"calls_per_s"`
	P50us        int64   `json:"p50_us"`
	P99us        int64   `json:"p99_us"`
	BaselinePerS float64 `json:"baseline_inserts_per_s"`
	// BaselineP50us and BaselineP99us are the raw inserts' latencies under
	// the same load: the floor under a call's.
	BaselineP50us int64   `json:"baseline_p50_us"`
	BaselineP99us int64   `json:"baseline_p99_us"`
	Ratio         float64 `json:"ratio"`
	// EntriesPerCommit and BaselineRowsPerCommit are how many rows each
	// side's group commits carried on average: a WRITE call appends two
	// entries, a READ call one.
	EntriesPerCommit      float64 `json:"entries_per_commit"`
	BaselineRowsPerCommit float64 `json:"baseline_rows_per_commit"`
	// BaselineSync is how the baseline made its rows durable: "full"
	// (SQLite's own fsync at every commit) or "pipelined" (the store's way).
	BaselineSync string `json:"baseline_sync,omitempty"`
	// ReadP99us and WriteP99us split the calls' p99 by tool: a WRITE call
	// waits for two durable entries (its intent, then its outcome), a
	// READ call for one.
	ReadP99us  int64 `json:"read_p99_us,omitempty"`
	WriteP99us int64 `json:"write_p99_us,omitempty"`
	// StartP99us is the calls' p99 from the moment a caller began each
	// one rather than from its schedule: the pacing's own delay left out.
	StartP99us int64 `json:"p99_from_start_us"`
	// FloorP50us and FloorP99us, paced only, are the latencies of the
	// disk floor under the same load: calls that each append, for every
	// durable entry a gateway call needs, a 4 KiB block to a plain file
	// with a group-committed fsync, and nothing else. No durable gateway
	// on this disk can do better; a target under FloorP99us is out of
	// reach.
	FloorP50us int64 `json:"floor_p50_us,omitempty"`
	FloorP99us int64 `json:"floor_p99_us,omitempty"`
	// LockFloorPerS, on PostgreSQL, is the floor of the store's design
	// under the same load (rawpg.HeadLocked): as many writers as
	// instances, each committing its groups under the chain head's lock
	// with the store's statements and barrier, and nothing else.
	// RatioToFloor is the gateway's calls/s over it: what custody's own
	// code costs, the one chain left out.
	LockFloorPerS          float64 `json:"floor_inserts_per_s,omitempty"`
	LockFloorRowsPerCommit float64 `json:"floor_rows_per_commit,omitempty"`
	RatioToFloor           float64 `json:"ratio_to_floor,omitempty"`
}

// runBench measures the gateway:
//
//	custody bench gateway [--callers 64] [--seconds 10 | --calls N] [--rate 0] [--writes 0.5] [--rounds 5] [--baseline-sync full]
//
// Callers drive a small READ tool and a WRITE tool (no approval) through the
// full pipeline on a temporary SQLite data directory, and the same load
// generator drives the raw group-commit baseline of the same database:
// what SQLite alone does. The two sides take turns, in rounds, so that both
// meet the same disk: a shared machine's fsync latency drifts by half from
// one ten-second stretch to the next. With --rate R both are paced at a
// steady R per second and latency is measured from each call's scheduled
// start, and a third side, the disk floor, makes calls that only append a
// 4 KiB block to a plain file with a group-committed fsync for each
// durable entry a gateway call needs: what any durable design gets from
// this disk. The baseline lets SQLite fsync at every commit; with
// --baseline-sync pipelined it syncs the way the store does, so that the
// two can be told apart. With --calls N each side makes exactly N calls,
// split over its rounds, instead of running for --seconds: a run whose
// work does not depend on the machine's speed. The last line is one JSON
// object.
func (m *Main) runBench(ctx context.Context, args []string) int {
	const usage = "[--callers N] [--seconds S | --calls N] [--rate R] [--writes F] [--rounds N] [--baseline-sync full|pipelined] [--store postgres://... [--instances N]]"
	switch {
	case len(args) > 0 && args[0] == "upstream":
		return m.runBenchUpstream(ctx, args[1:])
	case len(args) > 0 && args[0] == "upstream-server":
		return m.runBenchUpstreamServer(ctx, args[1:])
	case len(args) == 0 || args[0] != "gateway":
		fmt.Fprintln(m.Stderr, "usage: custody bench gateway "+usage)
		fmt.Fprintln(m.Stderr, "       custody bench upstream [--command CMD --arg A ... --tool NAME --arguments JSON] [--seconds S | --calls N]")
		return exitUsage
	}
	fs := m.flags("bench gateway", usage)
	callers := fs.Int("callers", 64, "concurrent `N` callers")
	seconds := fs.Float64("seconds", 10, "measure each side for `S` seconds in all")
	calls := fs.Int64("calls", 0, "make exactly `N` calls on each side in all, split over its rounds, instead of running for --seconds (with --rate, at that pace)")
	rate := fs.Float64("rate", 0, "pace a steady `R` calls per second; 0 runs flat out")
	writes := fs.Float64("writes", 0.5, "`FRACTION` of calls that go to the WRITE tool")
	rounds := fs.Int("rounds", 5, "split each side's time, or its calls, into `N` turns, alternating with the other side's")
	baseline := fs.Bool("baseline", true, "also measure the raw group-commit baseline and, paced, the disk floor")
	baselineSync := fs.String("baseline-sync", "full", "how the baseline makes rows durable: `full` (SQLite fsyncs each commit) or pipelined (as the store does)")
	store := fs.String("store", "", "measure gateways on PostgreSQL at this `URL`, in a scratch schema dropped afterwards, against PostgreSQL's raw group-commit insert and the floor of one head-locked chain")
	instances := fs.Int("instances", 1, "with --store, `N` gateway instances on the one store, calls spread over them")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the run to `FILE` (go tool pprof reads it); with --baseline=false it holds the gateway alone")
	if ok, code := m.parse(fs, args[1:]); !ok {
		return code
	}
	if *callers < 1 || *seconds <= 0 || *rate < 0 || *writes < 0 || *writes > 1 || *rounds < 1 || *instances < 1 {
		return m.flagUsage(fs, "--callers, --seconds, --rounds must be positive, --rate not negative, --writes within [0,1]")
	}
	if *calls < 0 || *calls > 0 && *calls < int64(*rounds) {
		return m.flagUsage(fs, "--calls, when set, must be at least --rounds: every round makes a call")
	}
	mode, ok := parseRawSync(*baselineSync)
	if !ok {
		return m.flagUsage(fs, fmt.Sprintf("--baseline-sync %q: want full or pipelined", *baselineSync))
	}
	load := benchLoad{callers: *callers, d: time.Duration(*seconds * float64(time.Second) / float64(*rounds)), calls: *calls, rate: *rate}
	dir, err := os.MkdirTemp("", "custody-bench-")
	if err != nil {
		return m.fail(fmt.Errorf("bench: temp dir: %w", err))
	}
	defer os.RemoveAll(dir)

	if p50, p99, err := fsyncLatency(dir, 200); err == nil {
		// The floor under every durable call's latency, on this disk now.
		fmt.Fprintf(m.Stdout, "disk: fsync of a 4 KiB write p50 %d µs, p99 %d µs (200 samples)\n", p50.Microseconds(), p99.Microseconds())
	}
	if load.rate > 0 {
		// What pacing alone costs: a call that does nothing, measured
		// from its schedule like the real ones, for at most two seconds:
		// a turn's length, or with --calls as many calls as a turn.
		probe := load
		probe.d = min(load.d, 2*time.Second)
		if load.calls > 0 {
			probe.calls = max(1, min(load.share(0, *rounds).calls, int64(2*load.rate)))
		}
		samples, _, err := probe.run(ctx, func(context.Context, int64) error { return nil })
		if err == nil {
			lat := latencies(samples, fromSchedule, nil)
			fmt.Fprintf(m.Stdout, "harness: a paced call that does nothing p50 %d µs, p99 %d µs\n", percentile(lat, 0.50), percentile(lat, 0.99))
		}
	}
	stopProfile, err := startCPUProfile(*cpuprofile)
	if err != nil {
		return m.fail(err)
	}
	plan := benchPlan{load: load, writes: *writes, rounds: *rounds, baseline: *baseline, sync: mode}
	var res benchResult
	if *store != "" {
		res, err = m.benchPostgres(ctx, dir, *store, *instances, plan)
	} else {
		res, err = m.benchCompare(ctx, dir, plan)
	}
	if perr := stopProfile(); err == nil {
		err = perr
	}
	if err != nil {
		return m.fail(err)
	}
	return m.printJSON(res)
}

// benchPlan is what one bench run measures.
type benchPlan struct {
	load     benchLoad
	writes   float64 // the fraction of calls to the WRITE tool
	rounds   int     // turns per side
	baseline bool    // whether to measure the raw baseline too
	sync     rawsqlite.Sync
}

// parseRawSync reads the --baseline-sync flag.
func parseRawSync(s string) (rawsqlite.Sync, bool) {
	for _, m := range []rawsqlite.Sync{rawsqlite.SyncFull, rawsqlite.SyncPipelined} {
		if s == m.String() {
			return m, true
		}
	}
	return 0, false
}

// benchCompare runs the gateway side and, with a baseline, the raw
// group-commit side for rounds turns of load each, alternating which goes
// first, and returns both sides' figures and their ratio.
func (m *Main) benchCompare(ctx context.Context, dir string, p benchPlan) (benchResult, error) {
	s, err := m.sqliteOnly().openStack(ctx, filepath.Join(dir, "data"), "", example.BenchTools("bench_read", "bench_write")...)
	if err != nil {
		return benchResult{}, err
	}
	defer s.Close()
	gw := gatewaySide(s, p.writes)
	fmt.Fprintf(m.Stdout, "%s, %.0f%% writes; %s ...\n", p.load, p.writes*100, p.load.rounds(p.rounds))
	if !p.baseline {
		if err := m.benchRounds(ctx, p.load, p.rounds, gw); err != nil {
			return benchResult{}, err
		}
		return m.benchSummary(gw, nil), nil
	}
	var raw *benchSide
	var floor *benchSide
	err = rawsqlite.GroupCommit(ctx, dir, p.sync, func(g *rawsqlite.Group) error {
		raw = rawSide(g, p.load.callers)
		if p.load.rate == 0 {
			return m.benchRounds(ctx, p.load, p.rounds, gw, raw)
		}
		d, err := openDiskFloor(dir)
		if err != nil {
			return err
		}
		floor = floorSide(d, gw.tool)
		return errors.Join(m.benchRounds(ctx, p.load, p.rounds, gw, raw, floor), d.close())
	})
	if err != nil {
		return benchResult{}, err
	}
	res := m.benchSummary(gw, raw)
	res.BaselineSync = p.sync.String()
	if floor != nil {
		res.FloorP50us, res.FloorP99us = m.floorSummary(floor)
	}
	return res, nil
}

// floorSummary prints the disk floor's figures and returns its latencies.
func (m *Main) floorSummary(floor *benchSide) (p50, p99 int64) {
	_, p50, p99 = floor.summary()
	fmt.Fprintf(m.Stdout, "disk floor: %d calls, p50 %d µs, p99 %d µs; %d appends in %d fsyncs, %.1f per fsync\n",
		floor.count(), p50, p99, floor.rows, floor.commits, floor.perCommit())
	fmt.Fprintln(m.Stdout, "  (a 4 KiB append to a plain file for each durable entry a call needs, no database: the least any durable design can do on this disk)")
	return p50, p99
}

// benchRounds gives each side rounds turns of load, the order of the
// sides reversed every other round, and prints each round's rates. A
// turn runs for load.d or, with load.calls set, makes its share of them:
// each side makes exactly load.calls calls in all.
func (m *Main) benchRounds(ctx context.Context, load benchLoad, rounds int, sides ...*benchSide) error {
	for r := range rounds {
		order := slices.Clone(sides)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, side := range order {
			if err := side.turn(ctx, load.share(r, rounds)); err != nil {
				return err
			}
		}
		fmt.Fprintf(m.Stdout, "round %d/%d:", r+1, rounds)
		for _, side := range sides {
			fmt.Fprintf(m.Stdout, " %s %.0f %s/s", side.name, side.lastRate, side.unit)
		}
		fmt.Fprintln(m.Stdout)
	}
	return nil
}

// benchSummary prints each side's totals and returns them as the result.
func (m *Main) benchSummary(gw, raw *benchSide) benchResult {
	var res benchResult
	res.CallsPerS, res.P50us, res.P99us = gw.summary()
	res.EntriesPerCommit = gw.perCommit()
	fmt.Fprintf(m.Stdout, "gateway: %d calls, %.0f calls/s, p50 %d µs, p99 %d µs; %d entries in %d commits, %.1f per commit\n",
		gw.count(), res.CallsPerS, res.P50us, res.P99us, gw.rows, gw.commits, res.EntriesPerCommit)
	for _, tool := range []string{toolRead, toolWrite} {
		lat := latencies(gw.samples, fromSchedule, func(s sample) bool { return gw.tool(s.n) == tool })
		if len(lat) == 0 {
			continue
		}
		p99 := percentile(lat, 0.99)
		fmt.Fprintf(m.Stdout, "  %s calls: %d, p50 %d µs, p99 %d µs\n", tool, len(lat), percentile(lat, 0.50), p99)
		if tool == toolRead {
			res.ReadP99us = p99
		} else {
			res.WriteP99us = p99
		}
	}
	start := latencies(gw.samples, fromStart, nil)
	res.StartP99us = percentile(start, 0.99)
	fmt.Fprintf(m.Stdout, "  from each call's start rather than its schedule: p50 %d µs, p99 %d µs\n", percentile(start, 0.50), res.StartP99us)
	if raw == nil {
		return res
	}
	res.BaselinePerS, res.BaselineP50us, res.BaselineP99us = raw.summary()
	res.BaselineRowsPerCommit = raw.perCommit()
	fmt.Fprintf(m.Stdout, "baseline: %d inserts, %.0f inserts/s, p50 %d µs, p99 %d µs; %d rows in %d commits, %.1f per commit\n",
		raw.count(), res.BaselinePerS, res.BaselineP50us, res.BaselineP99us, raw.rows, raw.commits, res.BaselineRowsPerCommit)
	if res.BaselinePerS > 0 {
		res.Ratio = round(res.CallsPerS/res.BaselinePerS, 3)
	}
	return res
}

// benchSide is one side of the comparison, measured over its turns.
type benchSide struct {
	name, unit string
	// do makes call n; n counts on across turns.
	do func(ctx context.Context, n int64) error
	// settle, when set, finishes what the side's calls left running in
	// the background; its time counts as the side's.
	settle func(ctx context.Context) error
	// committed, when set, reads how many rows the side's store has
	// committed so far, in how many transactions.
	committed func() (rows, commits int64)
	// tool, when set, names the tool call n goes to: toolRead or toolWrite.
	tool func(n int64) string

	n        int64    // calls made in the turns before
	samples  []sample // every turn's calls
	elapsed  time.Duration
	lastRate float64
	// rows and commits are what the side's turns committed.
	rows, commits int64
}

// The access of the two bench tools, as the summary names them.
const (
	toolRead  = "READ"
	toolWrite = "WRITE"
)

// gatewaySide calls the bench tools through the stack's gateway, the
// fraction writes of them the WRITE tool. A call leaves nothing running
// once it is answered: the side needs no settling.
func gatewaySide(s *stack, writes float64) *benchSide {
	reads := json.RawMessage(`{"zone":"UTC"}`)
	notes := json.RawMessage(`{"title":"bench","text":"a note written by the benchmark"}`)
	tool := func(n int64) string {
		if float64(n%100) < writes*100 {
			return toolWrite
		}
		return toolRead
	}
	return &benchSide{name: "gateway", unit: "calls", tool: tool,
		do: func(ctx context.Context, n int64) error {
			call := custody.Call{Tool: "bench_read", Args: reads, Actor: "bench", Via: "bench"}
			if tool(n) == toolWrite {
				call.Tool, call.Args = "bench_write", notes
			}
			_, err := s.gw.Call(ctx, call)
			return err
		},
		committed: func() (int64, int64) { return s.db.Size(), s.db.Commits() }}
}

// rawSide inserts bench.SampleEntry rows through the raw group commit.
func rawSide(g *rawsqlite.Group, callers int) *benchSide {
	return &benchSide{name: "baseline", unit: "inserts",
		do: func(_ context.Context, n int64) error {
			return g.Insert(bench.SampleEntry(int(n%int64(callers)), int(n)))
		},
		committed: g.Committed}
}

// turn runs load once against the side, then settles it.
func (b *benchSide) turn(ctx context.Context, load benchLoad) error {
	var rows0, commits0 int64
	if b.committed != nil {
		rows0, commits0 = b.committed()
	}
	base := b.n
	samples, elapsed, err := load.run(ctx, func(ctx context.Context, n int64) error { return b.do(ctx, base+n) })
	if err == nil && b.settle != nil {
		start := time.Now()
		err = b.settle(ctx)
		elapsed += time.Since(start)
	}
	if err != nil {
		return fmt.Errorf("bench: %s: %w", b.name, err)
	}
	if b.committed != nil {
		rows, commits := b.committed()
		b.rows, b.commits = b.rows+rows-rows0, b.commits+commits-commits0
	}
	for i := range samples {
		samples[i].n += base
	}
	b.n += int64(len(samples))
	b.samples = append(b.samples, samples...)
	b.elapsed += elapsed
	b.lastRate = float64(len(samples)) / elapsed.Seconds()
	return nil
}

// count returns how many calls the side made over its turns.
func (b *benchSide) count() int { return len(b.samples) }

// summary returns the side's rate over all its turns and its latency
// percentiles.
func (b *benchSide) summary() (perSec float64, p50, p99 int64) {
	lat := latencies(b.samples, fromSchedule, nil)
	if b.elapsed > 0 {
		perSec = round(float64(len(lat))/b.elapsed.Seconds(), 0)
	}
	return perSec, percentile(lat, 0.50), percentile(lat, 0.99)
}

// perCommit returns how many rows the side's commits carried on average,
// 0 when it made none.
func (b *benchSide) perCommit() float64 {
	if b.commits == 0 {
		return 0
	}
	return round(float64(b.rows)/float64(b.commits), 1)
}

// startCPUProfile starts profiling the process into path, when set, and
// returns the function that stops and saves the profile.
func startCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("bench: cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("bench: cpu profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("bench: cpu profile: %w", err)
		}
		return nil
	}, nil
}

// benchLoad is the load both sides of a comparison get: callers goroutines
// for d, or making calls calls when that is set, flat out or paced at
// rate per second. run makes a load's calls in one run; benchRounds
// splits them over a side's turns.
type benchLoad struct {
	callers int
	d       time.Duration
	calls   int64
	rate    float64
}

func (l benchLoad) String() string {
	what := fmt.Sprintf("%d callers for %s", l.callers, l.d)
	if l.calls > 0 {
		what = fmt.Sprintf("%d callers", l.callers)
	}
	if l.rate > 0 {
		return fmt.Sprintf("%s, paced at %.0f/s", what, l.rate)
	}
	return what + ", flat out"
}

// rounds says what rounds turns of the load give each side.
func (l benchLoad) rounds(rounds int) string {
	if l.calls > 0 {
		return fmt.Sprintf("%d rounds per side, %d calls per side in all", rounds, l.calls)
	}
	return fmt.Sprintf("%d rounds of %s per side", rounds, l.d)
}

// share returns the load of turn r of rounds: with calls, the turn's
// share of them, the first calls%rounds turns taking one more, so that
// the turns make calls calls in all; else the load itself.
func (l benchLoad) share(r, rounds int) benchLoad {
	if l.calls > 0 {
		n := int64(rounds)
		each, extra := l.calls/n, l.calls%n
		l.calls = each
		if int64(r) < extra {
			l.calls++
		}
	}
	return l
}

// sample is one call: its number and its latency in µs, from its
// scheduled start and from the moment a caller began it (the same when
// unpaced).
type sample struct {
	n, fromSchedule, fromStart int64
}

func fromSchedule(s sample) int64 { return s.fromSchedule }
func fromStart(s sample) int64    { return s.fromStart }

// latencies returns the latencies of the samples keep keeps (all when
// nil), as of reads them, sorted.
func latencies(samples []sample, of func(sample) int64, keep func(sample) bool) []int64 {
	lat := make([]int64, 0, len(samples))
	for _, s := range samples {
		if keep == nil || keep(s) {
			lat = append(lat, of(s))
		}
	}
	slices.Sort(lat)
	return lat
}

// run calls do, with the number of the call from 1 on, from the callers
// until d has passed or, with calls set, until they have made that many,
// and returns every call made and how long the run took. The first
// failed call stops the run and is returned with the count of failures.
func (l benchLoad) run(ctx context.Context, do func(ctx context.Context, n int64) error) ([]sample, time.Duration, error) {
	if l.calls == 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, l.d)
		defer cancel()
	}
	var seq atomic.Int64
	failed := &benchFailure{}
	done := make([][]sample, l.callers)
	start := time.Now()
	sched := newSchedule(start, l.d, l.calls, l.rate)
	var wg sync.WaitGroup
	for c := range l.callers {
		wg.Go(func() {
			wait, err := sched.waiter()
			if err != nil {
				failed.add(err)
				return
			}
			defer wait.close()
			for {
				begin, ok, err := sched.next(ctx, wait)
				if err != nil {
					failed.add(err)
					return
				}
				if !ok {
					return
				}
				// The deadline ends the run, not the call under way.
				n, began := seq.Add(1), time.Now()
				if err := do(context.WithoutCancel(ctx), n); err != nil {
					failed.add(err)
					return
				}
				end := time.Now()
				done[c] = append(done[c], sample{n: n, fromSchedule: end.Sub(begin).Microseconds(), fromStart: end.Sub(began).Microseconds()})
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if failed.err != nil {
		return nil, 0, fmt.Errorf("%d calls failed, first: %w", failed.n, failed.err)
	}
	return slices.Concat(done...), elapsed, nil
}

// benchFailure counts failed calls and keeps the first error.
type benchFailure struct {
	mu  sync.Mutex
	n   int
	err error
}

func (f *benchFailure) add(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	if f.err == nil {
		f.err = err
	}
}

// schedule hands out the start times of a run's calls. Paced, call k
// (from 0) is due k intervals after the run began, and the caller that
// takes it waits for that time on its own alarm, parked: no goroutine
// hands the time over, and no caller keeps a processor from the system
// measured while it waits. A caller late to take a call still measures
// from the call's time, so a system that falls behind is charged for the
// calls that waited. Unpaced, a call is due when a caller is ready for it.
// The schedule ends at the run's end or, with a count of calls, once it
// has handed out that many.
type schedule struct {
	start, end time.Time
	calls      int64         // the calls it hands out; 0 ends it at end instead
	interval   time.Duration // 0 when unpaced
	taken      atomic.Int64
}

// newSchedule returns the schedule of a run that began at start, making
// calls calls or, when that is 0, running for d, at rate per second or,
// when that is 0, flat out.
func newSchedule(start time.Time, d time.Duration, calls int64, rate float64) *schedule {
	s := &schedule{start: start, end: start.Add(d), calls: calls}
	if rate > 0 {
		s.interval = time.Duration(float64(time.Second) / rate)
	}
	return s
}

// waiter returns what a caller waits with; nil when unpaced.
func (s *schedule) waiter() (*alarm, error) {
	if s.interval == 0 {
		return nil, nil
	}
	a, err := newAlarm()
	if err != nil {
		return nil, fmt.Errorf("bench: pacing: %w", err)
	}
	return a, nil
}

// next waits with a until the next call is due and returns its time;
// false once ctx is done, once every call of a count has been handed out,
// or when the call would be due after the run's end.
func (s *schedule) next(ctx context.Context, a *alarm) (time.Time, bool, error) {
	k := s.taken.Add(1) - 1 // the call's number, from 0
	if s.calls > 0 && k >= s.calls {
		return time.Time{}, false, nil
	}
	if s.interval == 0 {
		return time.Now(), ctx.Err() == nil, nil
	}
	due := s.start.Add(time.Duration(k) * s.interval)
	if s.calls == 0 && !due.Before(s.end) {
		return time.Time{}, false, nil
	}
	if err := a.sleep(time.Until(due)); err != nil {
		return time.Time{}, false, fmt.Errorf("bench: pacing: %w", err)
	}
	return due, ctx.Err() == nil, nil
}

// percentile returns the p-th percentile of sorted values.
func percentile(sorted []int64, p float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// round rounds v to digits decimals.
func round(v float64, digits int) float64 {
	scale := 1.0
	for range digits {
		scale *= 10
	}
	return float64(int64(v*scale+0.5)) / scale
}
