package main

import (
	"syscall"
	"time"
)

// preciseSleep sleeps for d in the kernel, to within tens of
// microseconds. The runtime's own timers can wake a millisecond late on
// an idle machine, which a paced benchmark would count as latency of the
// system it measures.
func preciseSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for {
		var rem syscall.Timespec
		err := syscall.Nanosleep(&ts, &rem)
		if err != syscall.EINTR {
			return
		}
		ts = rem
	}
}
