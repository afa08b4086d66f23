package postgres

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/keyfile"
	"github.com/custody-dev/custody/ledger"
	"github.com/custody-dev/custody/store/postgres/pgtest"
)

// TestKeyFileRefusals: Open refuses a missing key option, a key file
// others may read, a damaged one and one in a missing directory, before
// it writes anything to the database.
func TestKeyFileRefusals(t *testing.T) {
	url := pgtest.URL(t)
	dir := t.TempDir()
	readable := filepath.Join(dir, "readable.key")
	if _, _, err := keyfile.LoadOrCreate(readable); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(readable, 0o640); err != nil {
		t.Fatal(err)
	}
	damaged := filepath.Join(dir, "damaged.key")
	if err := os.WriteFile(damaged, []byte("-----BEGIN PRIVATE KEY-----\nMC4CAQAw"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, file, says string
	}{
		{"ErrNoKeyFile", "", "Options.KeyFile"},
		{"ErrReadableByOthers", readable, "chmod 600"},
		{"ErrDamaged", damaged, damaged},
		{"ErrMissingDirectory", filepath.Join(dir, "missing", "signing.key"), "signing key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := Open(context.Background(), url, Options{KeyFile: tc.file})
			if err == nil {
				db.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Open: %v, want it to say %q", err, tc.says)
			}
		})
	}
	if n := pgtest.QueryInt(t, url, `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()`); n != 0 {
		t.Fatalf("a refused Open created %d tables", n)
	}
	if fi, err := os.Stat(readable); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatal("a refused key file was changed")
	}
}

// TestKeyCreated: a new key file is created 0600 with its public half
// beside it (0644), which the ledger records and PublicKey returns; a
// stale public file is replaced.
func TestKeyCreated(t *testing.T) {
	url := pgtest.URL(t)
	key := filepath.Join(t.TempDir(), "signing.key")
	db := open(t, url, Options{KeyFile: key})
	fi, err := os.Stat(key)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	if db.PublicKeyFile() != strings.TrimSuffix(key, ".key")+".pub" {
		t.Fatalf("PublicKeyFile = %s", db.PublicKeyFile())
	}
	fi, err = os.Stat(db.PublicKeyFile())
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("public key mode %v (%v), want 0644", fi.Mode().Perm(), err)
	}
	pub, err := readPub(db.PublicKeyFile())
	if err != nil || !pub.Equal(db.PublicKey()) {
		t.Fatalf("the public key file does not hold PublicKey (%v)", err)
	}
	if keys := db.PublicKeys(); len(keys) != 1 || !keys[0].Equal(pub) {
		t.Fatalf("PublicKeys = %d keys, want the one", len(keys))
	}
	stored, err := storedKey(context.Background(), db.pool)
	if err != nil || !stored.Equal(pub) {
		t.Fatalf("the ledger records another key (%v)", err)
	}
	db.Close()

	other, _, _ := ed25519.GenerateKey(rand.Reader)
	if err := os.WriteFile(db.PublicKeyFile(), ledger.MarshalPublicKey(other), 0o644); err != nil {
		t.Fatal(err)
	}
	again := open(t, url, Options{KeyFile: key})
	if pub, err := readPub(again.PublicKeyFile()); err != nil || !pub.Equal(again.PublicKey()) {
		t.Fatalf("a stale public key file was not replaced (%v)", err)
	}
}

// TestInstancesStartTogether opens several instances at once on a new
// schema with a key file none has created yet: one key, one migration,
// one ledger id, and every instance writes to the one chain.
func TestInstancesStartTogether(t *testing.T) {
	url := pgtest.URL(t)
	key := filepath.Join(t.TempDir(), "signing.key")
	const n = 6
	dbs := make([]*DB, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			dbs[i], errs[i] = Open(context.Background(), url, Options{KeyFile: key})
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("instance %d: %v", i, errs[i])
		}
		t.Cleanup(func() { dbs[i].Close() })
	}
	for i, db := range dbs {
		if !db.PublicKey().Equal(dbs[0].PublicKey()) || db.LedgerID() != dbs[0].LedgerID() {
			t.Fatalf("instance %d has key %x and ledger %s, instance 0 %x and %s",
				i, db.PublicKey(), db.LedgerID(), dbs[0].PublicKey(), dbs[0].LedgerID())
		}
		if _, err := db.Append(context.Background(), entry("test.kind", "t1")); err != nil {
			t.Fatalf("instance %d: Append: %v", i, err)
		}
	}
	ms, err := loadMigrations(migrationFiles)
	if err != nil {
		t.Fatal(err)
	}
	if got := pgtest.QueryInt(t, url, `SELECT count(*) FROM schema_migrations`); got != int64(len(ms)) {
		t.Fatalf("schema_migrations holds %d rows, want %d", got, len(ms))
	}
	if rep, err := dbs[0].Verify(context.Background()); err != nil || rep.Entries != n {
		t.Fatalf("Verify = %+v, %v; want %d entries", rep, err, n)
	}
}

// TestOtherKeyRefusedAfterUse: once checkpoints are signed, an instance
// with another key is still refused, and the ledger is left as it was.
func TestOtherKeyRefusedAfterUse(t *testing.T) {
	url := pgtest.URL(t)
	db := open(t, url, Options{})
	appendN(t, db, 3, "t1")
	if _, err := db.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), url, Options{KeyFile: filepath.Join(t.TempDir(), "other.key")})
	wantKind(t, "Open with another key", err, custody.EINVALID)
	if !strings.Contains(err.Error(), "same key file") {
		t.Fatalf("the refusal does not say what to do: %v", err)
	}
	if rep, err := db.Verify(context.Background()); err != nil || rep.Entries != 3 || rep.Checkpoints != 1 {
		t.Fatalf("Verify after the refusal = %+v, %v", rep, err)
	}
}

func TestPublicKeyFileName(t *testing.T) {
	for _, tc := range []struct{ key, pub string }{
		{"signing.key", "signing.pub"},
		{"/etc/custody/ledger.pem", "/etc/custody/ledger.pub"},
		{"key", "key.pub"},
		{"dir.d/key", "dir.d/key.pub"},
	} {
		if got := publicKeyFile(tc.key); got != tc.pub {
			t.Errorf("publicKeyFile(%q) = %q, want %q", tc.key, got, tc.pub)
		}
	}
}
