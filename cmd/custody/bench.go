package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
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
		fmt.Fprintln(m.Stderr, "       custody bench upstream [--door mcp|v1|none|sdk] [--command CMD --arg A ... --tool NAME --arguments JSON] [--seconds S | --calls N]")
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
	load := bench.Load{Callers: *callers, Duration: time.Duration(*seconds * float64(time.Second) / float64(*rounds)), Calls: *calls, Rate: *rate}
	dir, err := os.MkdirTemp("", "custody-bench-")
	if err != nil {
		return m.fail(fmt.Errorf("bench: temp dir: %w", err))
	}
	defer os.RemoveAll(dir)

	if p50, p99, err := bench.FsyncLatency(dir, 200); err == nil {
		// The floor under every durable call's latency, on this disk now.
		fmt.Fprintf(m.Stdout, "disk: fsync of a 4 KiB write p50 %d µs, p99 %d µs (200 samples)\n", p50.Microseconds(), p99.Microseconds())
	}
	if load.Rate > 0 {
		// What pacing alone costs: a call that does nothing, measured
		// from its schedule like the real ones, for at most two seconds:
		// a turn's length, or with --calls as many calls as a turn.
		probe := load
		probe.Duration = min(load.Duration, 2*time.Second)
		if load.Calls > 0 {
			probe.Calls = max(1, min(load.Share(0, *rounds).Calls, int64(2*load.Rate)))
		}
		samples, _, err := probe.Run(ctx, func(context.Context, int64) error { return nil })
		if err == nil {
			lat := bench.Latencies(samples, bench.FromSchedule, nil)
			fmt.Fprintf(m.Stdout, "harness: a paced call that does nothing p50 %d µs, p99 %d µs\n", bench.Percentile(lat, 0.50), bench.Percentile(lat, 0.99))
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
	load     bench.Load
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
	fmt.Fprintf(m.Stdout, "%s, %.0f%% writes; %s ...\n", p.load, p.writes*100, p.load.Rounds(p.rounds))
	if !p.baseline {
		if err := m.benchRounds(ctx, p.load, p.rounds, gw); err != nil {
			return benchResult{}, err
		}
		return m.benchSummary(gw, nil), nil
	}
	var raw *bench.Side
	var floor *bench.Side
	err = rawsqlite.GroupCommit(ctx, dir, p.sync, func(g *rawsqlite.Group) error {
		raw = rawSide(g, p.load.Callers)
		if p.load.Rate == 0 {
			return m.benchRounds(ctx, p.load, p.rounds, gw, raw)
		}
		d, err := bench.OpenDiskFloor(dir)
		if err != nil {
			return err
		}
		floor = floorSide(d, gw.Tool)
		return errors.Join(m.benchRounds(ctx, p.load, p.rounds, gw, raw, floor), d.Close())
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
func (m *Main) floorSummary(floor *bench.Side) (p50, p99 int64) {
	_, p50, p99 = floor.Summary()
	rows, commits := floor.Commits()
	fmt.Fprintf(m.Stdout, "disk floor: %d calls, p50 %d µs, p99 %d µs; %d appends in %d fsyncs, %.1f per fsync\n",
		floor.Count(), p50, p99, rows, commits, floor.PerCommit())
	fmt.Fprintln(m.Stdout, "  (a 4 KiB append to a plain file for each durable entry a call needs, no database: the least any durable design can do on this disk)")
	return p50, p99
}

// benchRounds gives the sides their turns of load (bench.TakeTurns) and
// prints each round's rates.
func (m *Main) benchRounds(ctx context.Context, load bench.Load, rounds int, sides ...*bench.Side) error {
	return bench.TakeTurns(ctx, load, rounds, func(r int) {
		fmt.Fprintf(m.Stdout, "round %d/%d:", r+1, rounds)
		for _, side := range sides {
			fmt.Fprintf(m.Stdout, " %s %.0f %s/s", side.Name, side.LastRate(), side.Unit)
		}
		fmt.Fprintln(m.Stdout)
	}, sides...)
}

// benchSummary prints each side's totals and returns them as the result.
func (m *Main) benchSummary(gw, raw *bench.Side) benchResult {
	var res benchResult
	res.CallsPerS, res.P50us, res.P99us = gw.Summary()
	res.EntriesPerCommit = gw.PerCommit()
	entries, commits := gw.Commits()
	fmt.Fprintf(m.Stdout, "gateway: %d calls, %.0f calls/s, p50 %d µs, p99 %d µs; %d entries in %d commits, %.1f per commit\n",
		gw.Count(), res.CallsPerS, res.P50us, res.P99us, entries, commits, res.EntriesPerCommit)
	for _, tool := range []string{toolRead, toolWrite} {
		lat := bench.Latencies(gw.Samples(), bench.FromSchedule, func(s bench.Sample) bool { return gw.Tool(s.N) == tool })
		if len(lat) == 0 {
			continue
		}
		p99 := bench.Percentile(lat, 0.99)
		fmt.Fprintf(m.Stdout, "  %s calls: %d, p50 %d µs, p99 %d µs\n", tool, len(lat), bench.Percentile(lat, 0.50), p99)
		if tool == toolRead {
			res.ReadP99us = p99
		} else {
			res.WriteP99us = p99
		}
	}
	start := bench.Latencies(gw.Samples(), bench.FromStart, nil)
	res.StartP99us = bench.Percentile(start, 0.99)
	fmt.Fprintf(m.Stdout, "  from each call's start rather than its schedule: p50 %d µs, p99 %d µs\n", bench.Percentile(start, 0.50), res.StartP99us)
	if raw == nil {
		return res
	}
	res.BaselinePerS, res.BaselineP50us, res.BaselineP99us = raw.Summary()
	res.BaselineRowsPerCommit = raw.PerCommit()
	rows, commits := raw.Commits()
	fmt.Fprintf(m.Stdout, "baseline: %d inserts, %.0f inserts/s, p50 %d µs, p99 %d µs; %d rows in %d commits, %.1f per commit\n",
		raw.Count(), res.BaselinePerS, res.BaselineP50us, res.BaselineP99us, rows, commits, res.BaselineRowsPerCommit)
	if res.BaselinePerS > 0 {
		res.Ratio = bench.Round(res.CallsPerS/res.BaselinePerS, 3)
	}
	return res
}

// The access of the two bench tools, as the summary names them.
const (
	toolRead  = "READ"
	toolWrite = "WRITE"
)

// gatewaySide calls the bench tools through the stack's gateway, the
// fraction writes of them the WRITE tool. A call leaves nothing running
// once it is answered: the side needs no settling.
func gatewaySide(s *stack, writes float64) *bench.Side {
	reads := json.RawMessage(`{"zone":"UTC"}`)
	notes := json.RawMessage(`{"title":"bench","text":"a note written by the benchmark"}`)
	tool := func(n int64) string {
		if float64(n%100) < writes*100 {
			return toolWrite
		}
		return toolRead
	}
	return &bench.Side{Name: "gateway", Unit: "calls", Tool: tool,
		Do: func(ctx context.Context, n int64) error {
			call := custody.Call{Tool: "bench_read", Args: reads, Actor: "bench", Via: "bench"}
			if tool(n) == toolWrite {
				call.Tool, call.Args = "bench_write", notes
			}
			_, err := s.gw.Call(ctx, call)
			return err
		},
		Committed: func() (int64, int64) { return s.db.Size(), s.db.Commits() }}
}

// rawSide inserts bench.SampleEntry rows through the raw group commit.
func rawSide(g *rawsqlite.Group, callers int) *bench.Side {
	return &bench.Side{Name: "baseline", Unit: "inserts",
		Do: func(_ context.Context, n int64) error {
			return g.Insert(bench.SampleEntry(int(n%int64(callers)), int(n)))
		},
		Committed: g.Committed}
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
