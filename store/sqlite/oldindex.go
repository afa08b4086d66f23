package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
)

// oldIndexFile is the lookup index earlier versions kept beside the
// database: postings of the entries by trace, kind and ref. The policy now
// reads keyed state in the database itself, so the file is derived data
// that nothing reads.
const oldIndexFile = "index.db"

// removeOldIndex deletes the lookup index an earlier version left in dir,
// with its -wal and -shm files, and says so in the log.
func removeOldIndex(dir string, log *slog.Logger) error {
	for _, suffix := range []string{"", "-wal", "-shm"} {
		path := filepath.Join(dir, oldIndexFile+suffix)
		err := os.Remove(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("remove the old lookup index: %w", err)
		}
		log.Info("removed the lookup index of an earlier version: lookups read keyed state now", "file", path)
	}
	return nil
}
