package sqlite

import (
	"context"
	"sync"
	"testing"

	msqlite "modernc.org/sqlite"
)

// TestOpenCommitsWithFdatasync checks that opening a store switches
// SQLite's commits to fdatasync, which the program no longer does itself.
func TestOpenCommitsWithFdatasync(t *testing.T) {
	if _, err := msqlite.Fdatasync(false); err != nil {
		t.Fatalf("switch fdatasync off: %v", err)
	}
	openTest(t, Options{})
	if !msqlite.FdatasyncEnabled() {
		t.Fatal("SQLite commits with fsync after Open, want fdatasync")
	}
}

// TestOpenConcurrently opens stores from several goroutines at once, so
// that the race detector sees every Open set the driver's switch.
func TestOpenConcurrently(t *testing.T) {
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		dir := t.TempDir()
		wg.Go(func() {
			db, err := Open(context.Background(), dir, Options{})
			if err == nil {
				err = db.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v", i, err)
		}
	}
	if !msqlite.FdatasyncEnabled() {
		t.Error("SQLite commits with fsync after Open, want fdatasync")
	}
}
