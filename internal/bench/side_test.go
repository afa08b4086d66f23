package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// A side's rate counts the time it takes to settle what its calls left
// running: work deferred past a turn is not free. The turn's elapsed time
// holds its calls, from the first one's start to the last one's end, and
// the settling, each as measured where it ran: however slow the machine,
// the sum is a floor, which a turn leaving out the settling misses by
// the settling's 50 ms.
func TestSideCountsSettle(t *testing.T) {
	var mu sync.Mutex
	var first, last time.Time
	var settled time.Duration
	side := &Side{Name: "gateway", Unit: "calls",
		Do: func(context.Context, int64) error {
			began := time.Now()
			time.Sleep(time.Millisecond)
			mu.Lock()
			defer mu.Unlock()
			if first.IsZero() {
				first = began
			}
			last = time.Now()
			return nil
		},
		Settle: func(context.Context) error {
			start := time.Now()
			time.Sleep(50 * time.Millisecond)
			settled = time.Since(start)
			return nil
		}}
	const calls = 20
	if err := side.Turn(context.Background(), Load{Callers: 1, Calls: calls}); err != nil {
		t.Fatal(err)
	}
	load := last.Sub(first)
	if side.Count() != calls {
		t.Fatalf("%d calls made, want %d", side.Count(), calls)
	}
	if side.elapsed < load+settled {
		t.Errorf("elapsed %s leaves out the settle: the calls took %s, the settle %s", side.elapsed, load, settled)
	}
	if rate, _, _ := side.Summary(); rate > calls/(load+settled).Seconds()+0.5 {
		t.Errorf("rate %.0f/s for %d calls in %s of calls and %s of settling", rate, calls, load, settled)
	}

	failing := &Side{Name: "gateway", Do: func(context.Context, int64) error { return nil },
		Settle: func(context.Context) error { return errors.New("index failed") }}
	if err := failing.Turn(context.Background(), Load{Callers: 1, Calls: 1}); err == nil || !strings.Contains(err.Error(), "gateway: index failed") {
		t.Errorf("failed settle: %v", err)
	}
}

// The calls of a side are numbered on across its turns, so that each
// goes to the tool its number picks.
func TestSideNumbersCallsAcrossTurns(t *testing.T) {
	var mu sync.Mutex
	seen := map[int64]bool{}
	side := &Side{Name: "gateway", Unit: "calls",
		Do: func(_ context.Context, n int64) error {
			mu.Lock()
			defer mu.Unlock()
			if seen[n] {
				return fmt.Errorf("call %d made twice", n)
			}
			seen[n] = true
			return nil
		}}
	load := Load{Callers: 3, Calls: 30}
	for range 2 {
		if err := side.Turn(context.Background(), load); err != nil {
			t.Fatal(err)
		}
	}
	if len(side.samples) != 60 || len(seen) != 60 || side.n != 60 {
		t.Fatalf("%d samples, %d calls, n = %d; want 60 of each", len(side.samples), len(seen), side.n)
	}
	for _, s := range side.samples {
		if !seen[s.N] || s.N < 1 || s.N > side.n || s.FromStart > s.FromSchedule {
			t.Fatalf("sample %+v of calls 1..%d", s, side.n)
		}
	}
}

// The sides take turns, the order reversed every other round, and a count
// of calls is split over the rounds, the first rounds taking what does not
// divide: 7 calls in 3 rounds are 3, 2 and 2.
func TestTakeTurns(t *testing.T) {
	var turns []string
	side := func(name string) *Side {
		return &Side{Name: name, Do: func(context.Context, int64) error { return nil }}
	}
	a, b := side("a"), side("b")
	a.Settle = func(context.Context) error { turns = append(turns, fmt.Sprintf("a%d", a.n)); return nil }
	b.Settle = func(context.Context) error { turns = append(turns, fmt.Sprintf("b%d", b.n)); return nil }
	var rounds []int
	if err := TakeTurns(context.Background(), Load{Callers: 2, Calls: 7}, 3, func(r int) { rounds = append(rounds, r) }, a, b); err != nil {
		t.Fatal(err)
	}
	// Settle runs before a turn's calls are counted: each entry is the
	// calls made in the turns before.
	if got, want := strings.Join(turns, " "), "a0 b0 b3 a3 a5 b5"; got != want {
		t.Errorf("turns %s, want %s", got, want)
	}
	if fmt.Sprint(rounds) != "[0 1 2]" || a.Count() != 7 || b.Count() != 7 {
		t.Errorf("rounds %v, %d and %d calls; want [0 1 2], 7 and 7", rounds, a.Count(), b.Count())
	}

	failing := &Side{Name: "b", Do: func(context.Context, int64) error { return errors.New("down") }}
	rounds = nil
	err := TakeTurns(context.Background(), Load{Callers: 1, Calls: 2}, 2, func(r int) { rounds = append(rounds, r) }, side("a"), failing)
	if err == nil || !strings.Contains(err.Error(), "bench: b: 1 calls failed, first: down") || len(rounds) != 0 {
		t.Errorf("a failing side: %v after rounds %v", err, rounds)
	}
}
