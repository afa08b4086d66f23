package sqlite

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/custody-dev/custody/internal/lockedbuf"
)

// The lookup index of an earlier version is removed when the store opens,
// with its -wal and -shm files, and the log says so.
func TestOldIndexRemoved(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"index.db", "index.db-wal", "index.db-shm"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("postings of another ledger"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var log lockedbuf.Buffer
	openDir(t, dir, Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	for _, name := range []string{"index.db", "index.db-wal", "index.db-shm"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s is still there: %v", name, err)
		}
	}
	if !strings.Contains(log.String(), "removed the lookup index of an earlier version") {
		t.Errorf("the log does not say so:\n%s", log.String())
	}
}
