package assure

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadKey: the key is created once, readable by its owner alone, and
// the same key is returned after; one others may read is refused.
func TestLoadKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	first, created, err := LoadKey(dir)
	if err != nil || !created {
		t.Fatalf("first LoadKey: created %v, %v", created, err)
	}
	fi, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	again, created, err := LoadKey(dir)
	if err != nil || created || !again.Equal(first) {
		t.Fatalf("second LoadKey: created %v, same key %v, %v", created, again.Equal(first), err)
	}
	if err := os.Chmod(filepath.Join(dir, KeyFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadKey(dir); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a key others may read: %v, want it refused", err)
	}
	if _, _, err := LoadKey(""); err == nil {
		t.Fatal("no data directory: want an error")
	}
}
