// Package smallfs gives tests a real filesystem that runs out of space:
// a small tmpfs mounted for one test, and a filler file that takes what
// space is left, so that a store's writes fail the way they do on a full
// disk (ENOSPC), not through an injected error.
package smallfs

import (
	"errors"
	"os"
	"syscall"
	"testing"
)

// Fill writes a file of n bytes into dir, or until the filesystem is full
// when n is 0, and returns a function that removes it again, freeing the
// space.
func Fill(t testing.TB, dir string, n int) (free func()) {
	t.Helper()
	f, err := os.CreateTemp(dir, "filler")
	if err != nil {
		t.Fatal(err)
	}
	path := f.Name()
	chunk := make([]byte, 4096)
	for written := 0; err == nil && (n == 0 || written < n); written += len(chunk) {
		_, err = f.Write(chunk)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil && (n > 0 || !errors.Is(err, syscall.ENOSPC)) {
		t.Fatalf("filling %s: %v", dir, err)
	}
	return func() {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
}
