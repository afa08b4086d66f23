//go:build !linux

package rawsqlite

import "os"

// fdatasync is fsync where the platform has no fdatasync, as the store's
// syncer does.
func fdatasync(f *os.File) error { return f.Sync() }
