//go:build !linux

package bench

import "time"

// alarm wakes one goroutine at a time it is given, with the runtime's
// timers.
type alarm struct{}

func newAlarm() (*alarm, error) { return &alarm{}, nil }

// sleep waits for d.
func (*alarm) sleep(d time.Duration) error {
	time.Sleep(d)
	return nil
}

func (*alarm) close() error { return nil }
