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

// TestLoadKeyFiles: a new data directory is its owner's alone, and a key
// file that is not a key is refused, never replaced.
func TestLoadKeyFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "data")
	if _, created, err := LoadKey(dir); err != nil || !created {
		t.Fatalf("LoadKey: %v", err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("data directory mode %v (%v), want 0700", fi.Mode().Perm(), err)
	}
	names, err := os.ReadDir(dir)
	if err != nil || len(names) != 1 || names[0].Name() != KeyFile {
		t.Fatalf("data directory holds %v (%v), want the key alone", names, err)
	}
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, KeyFile), []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadKey(bad); err == nil {
		t.Fatal("a key file that is not a key was accepted")
	}
	if raw, _ := os.ReadFile(filepath.Join(bad, KeyFile)); string(raw) != "not a key" {
		t.Fatal("LoadKey replaced a key file it could not read")
	}
}
