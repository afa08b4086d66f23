package smallfs

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// Mount mounts a tmpfs of size bytes on a new directory for the length of
// the test and returns the directory. The test is skipped where mounting
// is not allowed (it needs root, or CAP_SYS_ADMIN).
func Mount(t testing.TB, size int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "smallfs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	opts := "size=" + strconv.Itoa(size) + ",mode=0700"
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		t.Skipf("a full disk is simulated with a small tmpfs, and mounting one is not allowed here: %v", err)
	}
	// Registered first, so it runs after the cleanups that close what
	// the test opened on it.
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}
