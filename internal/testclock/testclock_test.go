package testclock_test

import (
	"slices"
	"testing"
	"time"

	"github.com/custody-dev/custody/internal/testclock"
)

var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func TestAdd(t *testing.T) {
	c := testclock.New(t0)
	c.Add(90 * time.Second)
	if got := c.Now(); !got.Equal(t0.Add(90 * time.Second)) {
		t.Fatalf("Now = %s, want 90s after %s", got, t0)
	}
}

// Timers fire when the clock passes their time, in the order of their
// times, and only then.
func TestAfterFunc(t *testing.T) {
	c := testclock.New(t0)
	var fired []string
	c.AfterFunc(2*time.Second, func() { fired = append(fired, "b") })
	c.AfterFunc(time.Second, func() { fired = append(fired, "a") })
	c.AfterFunc(2*time.Second, func() { fired = append(fired, "c") })
	c.Add(time.Second - time.Nanosecond)
	if len(fired) != 0 {
		t.Fatalf("fired %v before their time", fired)
	}
	c.Add(5 * time.Second)
	if want := []string{"a", "b", "c"}; !slices.Equal(fired, want) {
		t.Fatalf("fired %v, want %v", fired, want)
	}
	c.Add(time.Hour)
	if len(fired) != 3 {
		t.Fatalf("a timer fired twice: %v", fired)
	}
}

func TestTimerStop(t *testing.T) {
	c := testclock.New(t0)
	n := 0
	tm := c.AfterFunc(time.Second, func() { n++ })
	if !tm.Stop() {
		t.Error("Stop of a pending timer reported it not pending")
	}
	if tm.Stop() {
		t.Error("a second Stop reported the timer pending")
	}
	c.Add(time.Hour)
	if n != 0 {
		t.Fatalf("a stopped timer fired %d times", n)
	}
}

// Reset counts from the clock's present time, whether the timer was
// pending, stopped or had fired.
func TestTimerReset(t *testing.T) {
	c := testclock.New(t0)
	n := 0
	tm := c.AfterFunc(time.Second, func() { n++ })
	c.Add(900 * time.Millisecond)
	if !tm.Reset(time.Second) {
		t.Error("Reset of a pending timer reported it not pending")
	}
	c.Add(900 * time.Millisecond)
	if n != 0 {
		t.Fatal("a timer fired at its time from before its Reset")
	}
	c.Add(100 * time.Millisecond)
	if n != 1 {
		t.Fatalf("fired %d times, want once a second after its Reset", n)
	}
	if tm.Reset(time.Second) {
		t.Error("Reset of a fired timer reported it pending")
	}
	c.Add(time.Second)
	tm.Stop()
	tm.Reset(time.Second)
	c.Add(time.Second)
	if n != 3 {
		t.Fatalf("fired %d times, want 3: once more after each Reset", n)
	}
}

// A timer's function runs outside the clock's lock: it may use the clock
// and its timers.
func TestTimerFuncUsesClock(t *testing.T) {
	c := testclock.New(t0)
	var at time.Time
	var tm *testclock.Timer
	tm = c.AfterFunc(time.Second, func() {
		at = c.Now()
		tm.Reset(time.Second)
	})
	c.Add(time.Second)
	if !at.Equal(t0.Add(time.Second)) {
		t.Fatalf("the timer saw the clock at %s", at)
	}
	if !tm.Stop() {
		t.Fatal("the timer's own Reset left it not pending")
	}
}
