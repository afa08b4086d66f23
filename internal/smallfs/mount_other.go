//go:build !linux

package smallfs

import "testing"

// Mount skips the test: a small filesystem is mounted only on Linux.
func Mount(t testing.TB, size int) string {
	t.Helper()
	t.Skip("a full disk is simulated with a small tmpfs, mounted only on Linux")
	return ""
}
