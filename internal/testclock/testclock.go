// Package testclock provides the settable clock that tests hand to
// anything taking a Now function, with timers for anything taking an
// AfterFunc.
package testclock

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// Clock is a clock that moves only when told to. Its timers fire when it
// is moved past their time, never on their own. It is safe for
// concurrent use.
type Clock struct {
	mu     sync.Mutex
	t      time.Time
	timers map[*Timer]struct{} // the pending ones
	armed  uint64              // timers armed so far, to order those due at once
}

// New returns a clock standing at t.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock forward by d, then calls the function of every
// timer whose time it has reached, in the order of their times (of their
// arming when due at once). The functions run on the caller's goroutine
// once Add has let go of the clock, so that they may use it, and Add
// returns after them.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	var due []*Timer
	for t := range c.timers {
		if !t.when.After(c.t) {
			due = append(due, t)
			delete(c.timers, t)
		}
	}
	c.mu.Unlock()
	slices.SortFunc(due, func(a, b *Timer) int {
		return cmp.Or(a.when.Compare(b.when), cmp.Compare(a.seq, b.seq))
	})
	for _, t := range due {
		t.f()
	}
}

// AfterFunc returns a timer that calls f once the clock has moved d past
// its present time: time.AfterFunc on this clock. A timer due at once
// fires at the next Add.
func (c *Clock) AfterFunc(d time.Duration, f func()) *Timer {
	t := &Timer{c: c, f: f}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.arm(t, d)
	return t
}

// arm makes t pending, due d from now; c.mu is held.
func (c *Clock) arm(t *Timer, d time.Duration) {
	if c.timers == nil {
		c.timers = map[*Timer]struct{}{}
	}
	c.armed++
	t.when, t.seq = c.t.Add(d), c.armed
	c.timers[t] = struct{}{}
}

// Timer is a timer of a Clock, made by AfterFunc.
type Timer struct {
	c *Clock
	f func()
	// when and seq are guarded by c.mu.
	when time.Time
	seq  uint64
}

// Stop keeps t from firing. It reports whether t was pending: false when
// it had fired or been stopped already.
func (t *Timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	_, pending := t.c.timers[t]
	delete(t.c.timers, t)
	return pending
}

// Reset makes t due d from the clock's present time, whether it was
// pending, had fired or had been stopped. It reports whether t was
// pending.
func (t *Timer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	_, pending := t.c.timers[t]
	t.c.arm(t, d)
	return pending
}
