package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/custody-dev/custody/example"
	"github.com/custody-dev/custody/internal/bench"
	"github.com/custody-dev/custody/internal/bench/rawpg"
	"github.com/custody-dev/custody/internal/bench/rawsqlite"
)

// benchPostgres is benchCompare on PostgreSQL: the gateway side runs
// instances gateways on one store, in a scratch schema of the database at
// store, calls spread over them in turn; the baseline is PostgreSQL's raw
// group-commit insert (rawpg.GroupCommit) in another scratch
// schema, each commit flushed (--baseline-sync full) or flushed by a
// barrier after it as the store's are (pipelined). Both schemas are
// dropped afterwards.
func (m *Main) benchPostgres(ctx context.Context, dir, store string, instances int, p benchPlan) (benchResult, error) {
	scratch, drop, err := rawpg.ScratchSchema(ctx, store, "custody_bench")
	if err != nil {
		return benchResult{}, err
	}
	defer drop()
	env := m.withStore(scratch).withSetting("CUSTODY_SIGNING_KEY", filepath.Join(dir, "signing.key"))
	var sides []*benchSide
	for i := range instances {
		s, err := env.openStack(ctx, filepath.Join(dir, fmt.Sprint("data", i)), "", example.BenchTools("bench_read", "bench_write")...)
		if err != nil {
			return benchResult{}, err
		}
		defer s.Close()
		sides = append(sides, gatewaySide(s, p.writes))
	}
	gw := spread(sides)
	fmt.Fprintf(m.Stdout, "postgres, %d %s on one store; %s, %.0f%% writes; %d rounds of %s per side ...\n",
		instances, plural(instances, "instance"), p.load, p.writes*100, p.rounds, p.load.d)
	if !p.baseline {
		if err := m.benchRounds(ctx, p.load, p.rounds, gw); err != nil {
			return benchResult{}, err
		}
		return m.benchSummary(gw, nil), nil
	}
	var raw *benchSide
	err = rawpg.GroupCommit(ctx, store, p.sync == rawsqlite.SyncPipelined, func(g *rawpg.Group) error {
		raw = &benchSide{name: "baseline", unit: "inserts", committed: g.Committed,
			do: func(_ context.Context, n int64) error {
				return g.Insert(bench.SampleEntry(int(n%int64(p.load.callers)), int(n)))
			}}
		return m.benchRounds(ctx, p.load, p.rounds, gw, raw)
	})
	if err != nil {
		return benchResult{}, err
	}
	res := m.benchSummary(gw, raw)
	res.BaselineSync = p.sync.String()
	return res, nil
}

// spread makes one side of several gateways' sides, call n going to the
// gateway n modulo their number.
func spread(sides []*benchSide) *benchSide {
	if len(sides) == 1 {
		return sides[0]
	}
	k := int64(len(sides))
	return &benchSide{name: "gateway", unit: "calls", tool: sides[0].tool,
		do: func(ctx context.Context, n int64) error { return sides[n%k].do(ctx, n) },
		committed: func() (rows, commits int64) {
			for _, s := range sides {
				r, c := s.committed()
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
