//go:build !(linux || darwin || freebsd)

package sqlite

// freeBytes does not know the free space here.
func freeBytes(string) (uint64, bool) { return 0, false }
