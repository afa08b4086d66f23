package bench

import (
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// alarm wakes one goroutine at a time it is given, to within tens of
// microseconds: a Linux timerfd read through the runtime's poller. The
// goroutine waiting is parked and holds no processor meanwhile, and it
// wakes as a goroutine woken by the network does. The runtime's own timers
// can wake a millisecond late on an idle machine, and a sleep in the kernel
// keeps its processor from the goroutines of the system measured; a paced
// benchmark would count either as latency of that system.
type alarm struct {
	f *os.File // the timer, read through the runtime's poller
}

func newAlarm() (*alarm, error) {
	const tfdNonblock, tfdCloexec = syscall.O_NONBLOCK, syscall.O_CLOEXEC
	fd, _, errno := syscall.Syscall(syscall.SYS_TIMERFD_CREATE, 1 /* CLOCK_MONOTONIC */, tfdNonblock|tfdCloexec, 0)
	if errno != 0 {
		return nil, fmt.Errorf("timerfd_create: %w", errno)
	}
	return &alarm{f: os.NewFile(fd, "timerfd")}, nil
}

// sleep waits for d.
func (a *alarm) sleep(d time.Duration) error {
	if d <= 0 {
		return nil
	}
	// Control, not f.Fd, which would take f off the poller.
	rc, err := a.f.SyscallConn()
	if err != nil {
		return err
	}
	spec := struct{ interval, value syscall.Timespec }{value: syscall.NsecToTimespec(int64(d))}
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall6(syscall.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
	}); err != nil {
		return err
	}
	if errno != 0 {
		return fmt.Errorf("timerfd_settime: %w", errno)
	}
	var expirations [8]byte
	if _, err := a.f.Read(expirations[:]); err != nil {
		return fmt.Errorf("timerfd read: %w", err)
	}
	return nil
}

// close releases the timer; a nil alarm has none.
func (a *alarm) close() error {
	if a == nil {
		return nil
	}
	return a.f.Close()
}
