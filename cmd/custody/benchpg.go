package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/example"
	"github.com/custody-dev/custody/internal/bench"
	"github.com/custody-dev/custody/internal/bench/rawpg"
	"github.com/custody-dev/custody/internal/bench/rawsqlite"
)

// benchPostgres is benchCompare on PostgreSQL: the gateway side runs
// instances gateways on one store, in a scratch schema of the database at
// store, calls spread over them in turn. Two sides take turns with it,
// each in a scratch schema of its own: the baseline, PostgreSQL's raw
// group-commit insert (rawpg.GroupCommit), each commit flushed
// (--baseline-sync full) or flushed by a barrier after it as the store's
// are (pipelined); and the floor, instances writers committing groups
// under the chain head's lock as the store does (rawpg.HeadLocked). The
// schemas are dropped afterwards.
func (m *Main) benchPostgres(ctx context.Context, dir, store string, instances int, p benchPlan) (benchResult, error) {
	scratch, drop, err := rawpg.ScratchSchema(ctx, store, "custody_bench")
	if err != nil {
		return benchResult{}, err
	}
	defer drop()
	env := m.withStore(scratch).withSetting("CUSTODY_SIGNING_KEY", filepath.Join(dir, "signing.key"))
	var sides []*bench.Side
	for i := range instances {
		s, err := env.openStack(ctx, filepath.Join(dir, fmt.Sprint("data", i)), "", example.BenchTools("bench_read", "bench_write")...)
		if err != nil {
			return benchResult{}, err
		}
		defer s.Close()
		sides = append(sides, gatewaySide(s, p.writes))
	}
	gw := spread(sides)
	fmt.Fprintf(m.Stdout, "postgres, %d %s on one store; %s, %.0f%% writes; %s ...\n",
		instances, plural(instances, "instance"), p.load, p.writes*100, p.load.Rounds(p.rounds))
	if !p.baseline {
		if err := m.benchRounds(ctx, p.load, p.rounds, gw); err != nil {
			return benchResult{}, err
		}
		return m.benchSummary(gw, nil), nil
	}
	var raw, floor *bench.Side
	err = rawpg.GroupCommit(ctx, store, p.sync == rawsqlite.SyncPipelined, func(g *rawpg.Group) error {
		raw = pgSide("baseline", g.Insert, g.Committed, p.load.Callers)
		return rawpg.HeadLocked(ctx, store, instances, func(f *rawpg.Floor) error {
			floor = pgSide("floor", f.Insert, f.Committed, p.load.Callers)
			return m.benchRounds(ctx, p.load, p.rounds, gw, raw, floor)
		})
	})
	if err != nil {
		return benchResult{}, err
	}
	res := m.benchSummary(gw, raw)
	res.BaselineSync = p.sync.String()
	m.lockFloorSummary(&res, floor, instances)
	return res, nil
}

// pgSide inserts bench.SampleEntry rows with insert.
func pgSide(name string, insert func(custody.Entry) error, committed func() (rows, commits int64), callers int) *bench.Side {
	return &bench.Side{Name: name, Unit: "inserts", Committed: committed,
		Do: func(_ context.Context, n int64) error {
			return insert(bench.SampleEntry(int(n%int64(callers)), int(n)))
		}}
}

// lockFloorSummary prints the head-locked floor's figures and adds them,
// with the gateway's ratio to them, to res.
func (m *Main) lockFloorSummary(res *benchResult, floor *bench.Side, writers int) {
	perS, p50, p99 := floor.Summary()
	res.LockFloorPerS, res.LockFloorRowsPerCommit = perS, floor.PerCommit()
	rows, commits := floor.Commits()
	fmt.Fprintf(m.Stdout, "floor: %d inserts, %.0f inserts/s, p50 %d µs, p99 %d µs; %d rows in %d commits, %.1f per commit\n",
		floor.Count(), perS, p50, p99, rows, commits, res.LockFloorRowsPerCommit)
	var toBaseline float64
	if res.BaselinePerS > 0 {
		toBaseline = bench.Round(perS/res.BaselinePerS, 3)
	}
	fmt.Fprintf(m.Stdout, "  (%d %s, each group under the chain head's lock with the store's statements and barrier, nothing else; %.3f of the baseline)\n",
		writers, plural(writers, "writer"), toBaseline)
	if perS > 0 {
		res.RatioToFloor = bench.Round(res.CallsPerS/perS, 3)
	}
}

// spread makes one side of several gateways' sides, call n going to the
// gateway n modulo their number.
func spread(sides []*bench.Side) *bench.Side {
	if len(sides) == 1 {
		return sides[0]
	}
	k := int64(len(sides))
	return &bench.Side{Name: "gateway", Unit: "calls", Tool: sides[0].Tool,
		Do: func(ctx context.Context, n int64) error { return sides[n%k].Do(ctx, n) },
		Committed: func() (rows, commits int64) {
			for _, s := range sides {
				r, c := s.Committed()
				rows, commits = max(rows, r), commits+c
			}
			return rows, commits
		}}
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
