// Package queue takes what waits on a channel as one batch, the way a
// group commit takes its requests: everything already queued joins, and
// nothing waits for more.
package queue

import "runtime"

// Gather adds to b what is already waiting on ch, up to limit: everything
// that queued while the previous batch was committing joins this one. A
// batch never waits for more: the writers acknowledged by the last batch
// queue again while this one commits, so batches grow with the load on
// their own, and waiting would only idle the disk. It first yields the
// processor once, so that writers the last batch woke up and that are
// ready to run queue their next request now rather than in the batch
// after; with nothing else ready to run, the yield returns at once.
func Gather[T any](b []T, ch <-chan T, limit int) []T {
	runtime.Gosched()
	return Drain(b, ch, limit)
}

// Drain adds to b what is already waiting on ch, up to limit.
func Drain[T any](b []T, ch <-chan T, limit int) []T {
	for len(b) < limit {
		select {
		case r, ok := <-ch:
			if !ok {
				return b
			}
			b = append(b, r)
		default:
			return b
		}
	}
	return b
}
