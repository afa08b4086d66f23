package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Load is the load every side of a comparison gets: Callers goroutines
// for Duration, or making Calls calls when that is set, flat out or paced
// at Rate per second. Run makes a load's calls in one run; TakeTurns
// splits them over a side's turns.
type Load struct {
	// Callers is how many goroutines make calls at once.
	Callers int
	// Duration is how long a run lasts when Calls is 0.
	Duration time.Duration
	// Calls, when set, is how many calls a run makes, however long they
	// take.
	Calls int64
	// Rate, when set, paces the calls at that many a second; 0 runs flat
	// out.
	Rate float64
}

// String describes the load as the bench's plan line does: its callers,
// how long they run, and their pace.
func (l Load) String() string {
	what := fmt.Sprintf("%d callers for %s", l.Callers, l.Duration)
	if l.Calls > 0 {
		what = fmt.Sprintf("%d callers", l.Callers)
	}
	if l.Rate > 0 {
		return fmt.Sprintf("%s, paced at %.0f/s", what, l.Rate)
	}
	return what + ", flat out"
}

// Rounds says what rounds turns of the load give each side.
func (l Load) Rounds(rounds int) string {
	if l.Calls > 0 {
		return fmt.Sprintf("%d rounds per side, %d calls per side in all", rounds, l.Calls)
	}
	return fmt.Sprintf("%d rounds of %s per side", rounds, l.Duration)
}

// Share returns the load of turn r of rounds: with Calls, the turn's
// share of them, the first Calls%rounds turns taking one more, so that
// the turns make Calls calls in all; else the load itself.
func (l Load) Share(r, rounds int) Load {
	if l.Calls > 0 {
		n := int64(rounds)
		each, extra := l.Calls/n, l.Calls%n
		l.Calls = each
		if int64(r) < extra {
			l.Calls++
		}
	}
	return l
}

// Run calls do, with the number of the call from 1 on, from the callers
// until Duration has passed or, with Calls set, until they have made that
// many, and returns every call made and how long the run took. The first
// failed call stops the run and is returned with the count of failures.
func (l Load) Run(ctx context.Context, do func(ctx context.Context, n int64) error) ([]Sample, time.Duration, error) {
	if l.Calls == 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, l.Duration)
		defer cancel()
	}
	var seq atomic.Int64
	failed := &failures{}
	done := make([][]Sample, l.Callers)
	start := time.Now()
	sched := newSchedule(start, l.Duration, l.Calls, l.Rate)
	var wg sync.WaitGroup
	for c := range l.Callers {
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
				done[c] = append(done[c], Sample{N: n, FromSchedule: end.Sub(begin).Microseconds(), FromStart: end.Sub(began).Microseconds()})
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

// failures counts a run's failed calls and keeps the first error.
type failures struct {
	mu  sync.Mutex
	n   int
	err error
}

func (f *failures) add(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	if f.err == nil {
		f.err = err
	}
}
