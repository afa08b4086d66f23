package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A paced call is due a whole number of intervals after the run began,
// and a caller never takes it early.
func TestSchedulePacesFromTheRunStart(t *testing.T) {
	start := time.Now()
	s := newSchedule(start, 60*time.Millisecond, 0, 200) // one call every 5 ms
	n := takeCalls(t, context.Background(), s, func(n int, due time.Time) {
		if now := time.Now(); now.Before(due) {
			t.Fatalf("call %d taken %s before it was due", n, due.Sub(now))
		}
		if want := start.Add(time.Duration(n) * 5 * time.Millisecond); !due.Equal(want) {
			t.Fatalf("call %d due at +%s, want +%s", n, due.Sub(start), want.Sub(start))
		}
	})
	if n != 12 {
		t.Errorf("%d calls in 60 ms at 200/s, want 12", n)
	}
	if took := time.Since(start); took < 55*time.Millisecond {
		t.Errorf("the schedule ran out after %s, want its 60 ms", took)
	}
}

// A caller that falls behind takes the calls it missed, each still due at
// its own time, so that their latency counts the wait.
func TestScheduleChargesLateCalls(t *testing.T) {
	start := time.Now()
	s := newSchedule(start, 0, 20, 1000) // 20 calls, one every ms
	n := takeCalls(t, context.Background(), s, func(n int, due time.Time) {
		if want := start.Add(time.Duration(n) * time.Millisecond); !due.Equal(want) {
			t.Fatalf("call %d due at +%s, want +%s: a late call was skipped", n, due.Sub(start), want.Sub(start))
		}
		time.Sleep(10 * time.Millisecond) // ten times the interval
	})
	if n != 20 {
		t.Errorf("%d calls taken of 20", n)
	}
}

// The run's end stops a schedule: its context done, or its count of
// calls handed out, however far behind its callers are.
func TestScheduleEnds(t *testing.T) {
	for _, rate := range []float64{0, 1000} {
		ctx, cancel := context.WithCancel(context.Background())
		s := newSchedule(time.Now(), time.Hour, 0, rate)
		n := takeCalls(t, ctx, s, func(n int, _ time.Time) {
			if n == 4 {
				cancel() // the run's deadline
			}
		})
		if n != 5 {
			t.Errorf("rate %.0f: %d calls taken, want the 5 before the run ended", rate, n)
		}
		// Every caller meets the end.
		a, err := s.waiter()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, err := s.next(ctx, a); ok || err != nil {
			t.Errorf("rate %.0f: a call after the run ended: %v", rate, err)
		}
		a.close()
	}
	for _, rate := range []float64{0, 1000} {
		s := newSchedule(time.Now(), 0, 7, rate)
		var wg sync.WaitGroup
		var taken atomic.Int64
		for range 3 {
			wg.Go(func() {
				taken.Add(int64(takeCalls(t, context.Background(), s, func(int, time.Time) {})))
			})
		}
		wg.Wait()
		if taken.Load() != 7 {
			t.Errorf("rate %.0f: 3 callers took %d calls of 7", rate, taken.Load())
		}
	}
}

// Unpaced, a call is due when its caller is ready, and nothing waits.
func TestScheduleUnpaced(t *testing.T) {
	s := newSchedule(time.Now(), time.Second, 0, 0)
	a, err := s.waiter()
	if err != nil || a != nil {
		t.Fatalf("waiter %v, %v; want none", a, err)
	}
	before := time.Now()
	due, ok, err := s.next(context.Background(), a)
	after := time.Now()
	if err != nil || !ok || due.Before(before) || due.After(after) {
		t.Fatalf("next = %v after the call began, %v, %v; want it due within the call", due.Sub(before), ok, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok, _ := s.next(ctx, a); ok {
		t.Error("a call after the run was cancelled")
	}
}

// The alarm waits at least as long as asked, and wakes.
func TestAlarmSleeps(t *testing.T) {
	a, err := newAlarm()
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	for _, d := range []time.Duration{0, 300 * time.Microsecond, 3 * time.Millisecond} {
		start := time.Now()
		if err := a.sleep(d); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took < d || took > 10*time.Second {
			t.Errorf("sleep(%s) took %s", d, took)
		}
	}
	if err := a.close(); err != nil {
		t.Fatal(err)
	}
	if err := a.sleep(time.Millisecond); err == nil {
		t.Error("a closed alarm slept")
	}
}

// takeCalls takes s's calls as one caller until it stops, handing each to
// call with its number from 0, and returns how many it took.
func takeCalls(t *testing.T, ctx context.Context, s *schedule, call func(n int, due time.Time)) int {
	t.Helper()
	a, err := s.waiter()
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	for n := 0; ; n++ {
		due, ok, err := s.next(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return n
		}
		call(n, due)
	}
}
