package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

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
