package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/custody-dev/custody"
)

// TestBackupWhileWriting backs a store up while appends go on, and
// restores the copy: it verifies, opens as a writable store (its identity
// checks pass), holds a prefix of the source's entries and goes on
// appending.
func TestBackupWhileWriting(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := openDir(t, dir, Options{CheckpointEvery: 16})
	for i := range 50 {
		mustAppend(t, db, entry("k", "t", nil, i))
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := db.Append(ctx, entry("k", "w", nil, i)); err != nil {
				t.Errorf("append during the backup: %v", err)
				return
			}
		}
	})
	dest := filepath.Join(t.TempDir(), "backup")
	rep, err := db.Backup(ctx, dest)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("Backup: %v", err)
	}
	if rep.Entries < 50 || rep.Checkpoints == 0 {
		t.Errorf("the backup's report %s: want at least the 50 entries before it, and checkpoints", rep)
	}
	for _, name := range []string{DatabaseFile, privateKeyFile, ledgerIDFile, recordFile} {
		fi, err := os.Stat(filepath.Join(dest, name))
		if err != nil {
			t.Fatalf("the backup lacks %s: %v", name, err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s in the backup has mode %#o", name, fi.Mode().Perm())
		}
	}
	if fi, _ := os.Stat(dest); fi.Mode().Perm() != 0o700 {
		t.Errorf("the backup directory has mode %#o, want 0700", fi.Mode().Perm())
	}

	// Restore: the copy is a data directory of its own.
	src, err := db.Entries(ctx, custody.Query{Limit: int(rep.Entries)})
	if err != nil {
		t.Fatal(err)
	}
	restored := openDir(t, dest, Options{})
	got, err := restored.Entries(ctx, custody.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(got)) != rep.Entries {
		t.Fatalf("the restored store holds %d entries, the report said %d", len(got), rep.Entries)
	}
	for i := range got {
		if got[i].Hash != src[i].Hash {
			t.Fatalf("entry %d differs from the source's", got[i].Seq)
		}
	}
	if _, err := restored.Append(ctx, entry("k", "after", nil, 0)); err != nil {
		t.Errorf("append to the restored store: %v", err)
	}
}

func TestBackupRefusesUsedDirectory(t *testing.T) {
	db := openDir(t, t.TempDir(), Options{})
	mustAppend(t, db, entry("k", "t", nil, 0))
	dest := t.TempDir()
	os.WriteFile(filepath.Join(dest, "custody.db"), []byte("older"), 0o600)
	_, err := db.Backup(context.Background(), dest)
	if err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("backup into a used directory: %v", err)
	}
	if raw, _ := os.ReadFile(filepath.Join(dest, "custody.db")); string(raw) != "older" {
		t.Error("the backup overwrote a file it found")
	}
}
