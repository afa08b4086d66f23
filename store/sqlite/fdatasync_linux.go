package sqlite

import (
	"os"
	"syscall"
)

// fdatasync flushes f's data, and what of its metadata reading it back
// needs, to the disk, as SQLite does on Linux.
func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
