//go:build !linux

package main

import "time"

// preciseSleep sleeps for d with the runtime's timers.
func preciseSleep(d time.Duration) { time.Sleep(d) }
