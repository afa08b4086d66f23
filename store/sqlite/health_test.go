package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
)

// TestDatabaseRemovedFailsWrites: custody.db removed, or replaced, under
// a running store makes every write fail and Health say why, rather than
// acknowledging writes into an unlinked file.
func TestDatabaseRemovedFailsWrites(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(t *testing.T, dir string)
	}{
		{"Removed", func(t *testing.T, dir string) { removeDB(t, dir) }},
		{"Replaced", func(t *testing.T, dir string) {
			path := filepath.Join(dir, DatabaseFile)
			copyFile(t, path, path+".copy")
			if err := os.Rename(path+".copy", path); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			db := openDir(t, dir, Options{})
			mustAppend(t, db, entry("k", "t", nil, 1))
			if err := db.Health(context.Background()); err != nil {
				t.Fatalf("Health before: %v", err)
			}
			tt.change(t, dir)
			_, err := db.Append(context.Background(), entry("k", "t", nil, 2))
			if kindOf(err) != custody.EUNAVAILABLE || !strings.Contains(err.Error(), "custody.db") {
				t.Fatalf("Append after the file went: %v; want unavailable naming custody.db", err)
			}
			err = db.Health(context.Background())
			if kindOf(err) != custody.EUNAVAILABLE || !strings.Contains(err.Error(), "removed or replaced") {
				t.Fatalf("Health after the file went: %v", err)
			}
		})
	}
}

// TestHealthAfterRefusedWrite: a write refused for want of space makes
// Health unavailable, with the reason, until a write succeeds again.
func TestHealthAfterRefusedWrite(t *testing.T) {
	db := openTest(t, Options{})
	mustAppend(t, db, entry("k", "t", nil, 1))
	ctx := context.Background()
	var pages int64
	if err := db.w.conn.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	// The writer's one connection can grow the file no further: a disk
	// that is full, as SQLite sees it.
	if _, err := db.w.conn.ExecContext(ctx, `PRAGMA max_page_count = `+itoa(pages)); err != nil {
		t.Fatal(err)
	}
	big := custody.Entry{Kind: "k", Body: []byte(`{"pad":"` + strings.Repeat("x", 64<<10) + `"}`)}
	if _, err := db.Append(ctx, big); kindOf(err) != custody.EUNAVAILABLE {
		t.Fatalf("Append on a full database: %v; want unavailable", err)
	}
	err := db.Health(ctx)
	if kindOf(err) != custody.EUNAVAILABLE || !strings.Contains(custody.AsError(err).Message, "was refused (disk full)") {
		t.Fatalf("Health after a refused write: %v", err)
	}
	if _, err := db.w.conn.ExecContext(ctx, `PRAGMA max_page_count = 1073741823`); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, db, big)
	if err := db.Health(ctx); err != nil {
		t.Fatalf("Health after a write succeeded again: %v", err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
