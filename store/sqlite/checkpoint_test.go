package sqlite

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"

	"github.com/custody-dev/custody/internal/testclock"
)

func sizes(t *testing.T, db *DB) []int64 {
	t.Helper()
	cps, err := db.Checkpoints(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, cp := range cps {
		if err := ledger.VerifyCheckpoint(db.PublicKey(), cp); err != nil {
			t.Errorf("checkpoint %d: %v", cp.Size, err)
		}
		out = append(out, cp.Size)
	}
	return out
}

func equalSizes(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCheckpointEvery(t *testing.T) {
	dir := t.TempDir()
	db := openDir(t, dir, Options{CheckpointEvery: 5, CheckpointInterval: time.Hour})
	var last custody.Entry
	for i := range 12 {
		last = mustAppend(t, db, entry("k", "t", nil, i))
	}
	if got := sizes(t, db); !equalSizes(got, []int64{5, 10}) {
		t.Fatalf("checkpoint sizes %v, want [5 10]", got)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openDir(t, dir, Options{})
	if got := sizes(t, db); !equalSizes(got, []int64{5, 10, 12}) {
		t.Fatalf("checkpoint sizes after Close %v, want [5 10 12]", got)
	}
	cp, err := db.LatestCheckpoint(context.Background())
	if err != nil || cp.Head != last.Hash {
		t.Fatalf("LatestCheckpoint = %+v, %v; want head %s", cp, err, last.Hash)
	}
}

func TestCheckpointInterval(t *testing.T) {
	t.Run("InjectedClock", func(t *testing.T) {
		c := testclock.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		db := openTest(t, Options{CheckpointInterval: time.Hour, Now: c.Now})
		mustAppend(t, db, entry("k", "t", nil, 1))
		c.Add(59 * time.Minute)
		mustAppend(t, db, entry("k", "t", nil, 2))
		if got := sizes(t, db); len(got) != 0 {
			t.Fatalf("checkpoints %v before the interval passed", got)
		}
		c.Add(2 * time.Minute)
		mustAppend(t, db, entry("k", "t", nil, 3))
		if got := sizes(t, db); !equalSizes(got, []int64{3}) {
			t.Fatalf("checkpoint sizes %v, want [3]", got)
		}
		cp, _ := db.LatestCheckpoint(context.Background())
		if want := custody.FormatTime(c.Now()); cp.At != want {
			t.Errorf("checkpoint at %s, want %s", cp.At, want)
		}
	})
	t.Run("Idle", func(t *testing.T) {
		db := openTest(t, Options{CheckpointInterval: 20 * time.Millisecond})
		mustAppend(t, db, entry("k", "t", nil, 1))
		deadline := time.Now().Add(10 * time.Second)
		for len(sizes(t, db)) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("no checkpoint written while idle")
			}
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond)
		if got := sizes(t, db); !equalSizes(got, []int64{1}) {
			t.Fatalf("checkpoint sizes %v, want [1]: nothing new, nothing written", got)
		}
	})
}

func TestCheckpointNow(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{})
	if _, err := db.Checkpoint(ctx); kindOf(err) != custody.ENOTFOUND {
		t.Fatalf("Checkpoint of an empty ledger: err = %v, want ENOTFOUND", err)
	}
	if _, err := db.LatestCheckpoint(ctx); kindOf(err) != custody.ENOTFOUND {
		t.Fatalf("LatestCheckpoint with none: err = %v, want ENOTFOUND", err)
	}
	e := mustAppend(t, db, entry("k", "t", nil, 1))
	cp, err := db.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cp.Size != 1 || cp.Head != e.Hash {
		t.Fatalf("Checkpoint = %+v, want size 1 head %s", cp, e.Hash)
	}
	again, err := db.Checkpoint(ctx)
	if err != nil || again != cp {
		t.Fatalf("second Checkpoint = %+v, %v; want the same one", again, err)
	}
	if got := sizes(t, db); !equalSizes(got, []int64{1}) {
		t.Fatalf("checkpoint sizes %v, want [1]", got)
	}
}

func TestSigningKey(t *testing.T) {
	dir := t.TempDir()
	db := openDir(t, dir, Options{})
	keyFile := filepath.Join(dir, "signing.key")
	fi, err := os.Stat(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("signing.key mode %#o, want 0600", fi.Mode().Perm())
	}
	pubText, err := os.ReadFile(db.PublicKeyFile())
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ledger.ParsePublicKey(pubText)
	if err != nil || !pub.Equal(db.PublicKey()) {
		t.Fatalf("signing.pub = %x, %v; want %x", pub, err, db.PublicKey())
	}
	before, _ := os.ReadFile(keyFile)
	db.Close()

	db = openDir(t, dir, Options{})
	after, _ := os.ReadFile(keyFile)
	if !bytes.Equal(before, after) || !db.PublicKey().Equal(pub) {
		t.Fatal("reopening changed the signing key")
	}
	db.Close()

	if err := os.Chmod(keyFile, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), dir, Options{}); err == nil {
		t.Fatal("Open accepted a signing key readable by others")
	}
}

func TestOpenCreatesPrivateDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "data")
	db := openDir(t, dir, Options{})
	fi, err := os.Stat(db.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Fatalf("data dir mode %#o, want 0700", fi.Mode().Perm())
	}
	if _, err := os.Stat(filepath.Join(dir, DatabaseFile)); err != nil {
		t.Fatal(err)
	}
}
