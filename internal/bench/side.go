package bench

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Side is one side of a comparison, measured over its turns. Its caller
// sets what a call does and what the side can report; Turn fills in the
// rest.
type Side struct {
	// Name and Unit name the side and what its calls are in the bench's
	// lines: "gateway" and "calls", "baseline" and "inserts".
	Name, Unit string
	// Do makes call n; n counts on across turns.
	Do func(ctx context.Context, n int64) error
	// Settle, when set, finishes what the side's calls left running in
	// the background; its time counts as the side's.
	Settle func(ctx context.Context) error
	// Committed, when set, reads how many rows the side's store has
	// committed so far, in how many transactions.
	Committed func() (rows, commits int64)
	// Tool, when set, names the tool call n goes to; the harness only
	// carries it, for a summary split by tool.
	Tool func(n int64) string

	n        int64    // calls made in the turns before
	samples  []Sample // every turn's calls
	elapsed  time.Duration
	lastRate float64
	// rows and commits are what the side's turns committed.
	rows, commits int64
}

// TakeTurns gives each side rounds turns of load, the order of the sides
// reversed every other round, so that all of them meet the same machine
// as it drifts. A turn runs for load.Duration or, with load.Calls set,
// makes its share of them: each side makes exactly load.Calls calls in
// all. After each round, done, when set, is told which (from 0); the
// sides' LastRate is that round's. The first side that fails stops the
// rounds with its error.
func TakeTurns(ctx context.Context, load Load, rounds int, done func(round int), sides ...*Side) error {
	for r := range rounds {
		order := slices.Clone(sides)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, side := range order {
			if err := side.Turn(ctx, load.Share(r, rounds)); err != nil {
				return err
			}
		}
		if done != nil {
			done(r)
		}
	}
	return nil
}

// Turn runs load once against the side, then settles it. It returns the
// first failure, of a call or of the settling, named after the side.
func (b *Side) Turn(ctx context.Context, load Load) error {
	var rows0, commits0 int64
	if b.Committed != nil {
		rows0, commits0 = b.Committed()
	}
	base := b.n
	samples, elapsed, err := load.Run(ctx, func(ctx context.Context, n int64) error { return b.Do(ctx, base+n) })
	if err == nil && b.Settle != nil {
		start := time.Now()
		err = b.Settle(ctx)
		elapsed += time.Since(start)
	}
	if err != nil {
		return fmt.Errorf("bench: %s: %w", b.Name, err)
	}
	if b.Committed != nil {
		rows, commits := b.Committed()
		b.rows, b.commits = b.rows+rows-rows0, b.commits+commits-commits0
	}
	for i := range samples {
		samples[i].N += base
	}
	b.n += int64(len(samples))
	b.samples = append(b.samples, samples...)
	b.elapsed += elapsed
	b.lastRate = float64(len(samples)) / elapsed.Seconds()
	return nil
}

// Count returns how many calls the side made over its turns.
func (b *Side) Count() int { return len(b.samples) }

// Samples returns every call the side made over its turns, turn by turn.
// The slice is the side's own: its caller reads it and keeps it as is.
func (b *Side) Samples() []Sample { return b.samples }

// LastRate returns the calls per second of the side's last turn.
func (b *Side) LastRate() float64 { return b.lastRate }

// Commits returns how many rows the side's turns committed, in how many
// commits, as Committed counts them; 0 and 0 without it.
func (b *Side) Commits() (rows, commits int64) { return b.rows, b.commits }

// Summary returns the side's rate over all its turns, settling included,
// and its latency percentiles from the calls' schedule.
func (b *Side) Summary() (perSec float64, p50, p99 int64) {
	lat := Latencies(b.samples, FromSchedule, nil)
	if b.elapsed > 0 {
		perSec = Round(float64(len(lat))/b.elapsed.Seconds(), 0)
	}
	return perSec, Percentile(lat, 0.50), Percentile(lat, 0.99)
}

// PerCommit returns how many rows the side's commits carried on average,
// 0 when it made none.
func (b *Side) PerCommit() float64 {
	if b.commits == 0 {
		return 0
	}
	return Round(float64(b.rows)/float64(b.commits), 1)
}
