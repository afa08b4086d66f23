package keyfile

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/custody-dev/custody/ledger"
)

// childEnv names the key file a re-executed test binary loads or creates
// (see TestMain).
const childEnv = "KEYFILE_TEST_CHILD"

// TestMain lets TestProcessesAgree run this binary as one of the
// processes that race to create a key: it prints the key's public half
// and whether it created it.
func TestMain(m *testing.M) {
	if name := os.Getenv(childEnv); name != "" {
		priv, created, err := LoadOrCreate(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("%x %v\n", []byte(priv.Public().(ed25519.PublicKey)), created)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func newKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return priv
}

func writeRaw(t *testing.T, name string, data []byte, perm fs.FileMode) {
	t.Helper()
	if err := os.WriteFile(name, data, perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(name, perm); err != nil { // past the umask
		t.Fatal(err)
	}
}

func pemOf(t *testing.T, priv ed25519.PrivateKey) []byte {
	t.Helper()
	text, err := ledger.MarshalPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// leftovers returns the temporary files beside name.
func leftovers(t *testing.T, name string) []string {
	t.Helper()
	des, err := os.ReadDir(filepath.Dir(name))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		if strings.HasPrefix(de.Name(), tempPrefix(name)) {
			out = append(out, de.Name())
		}
	}
	return out
}

// TestLoadOrCreate: the first call creates a key of mode 0600 that Read
// returns, later calls return the same key, and nothing else is left in
// the directory.
func TestLoadOrCreate(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "signing.key")
	first, created, err := LoadOrCreate(name)
	if err != nil || !created {
		t.Fatalf("first LoadOrCreate: created %v, %v; want created", created, err)
	}
	fi, err := os.Stat(name)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	read, err := Read(name)
	if err != nil || !read.Equal(first) {
		t.Fatalf("Read after LoadOrCreate: same key %v, %v", read.Equal(first), err)
	}
	again, created, err := LoadOrCreate(name)
	if err != nil || created || !again.Equal(first) {
		t.Fatalf("second LoadOrCreate: created %v, same key %v, %v", created, again.Equal(first), err)
	}
	des, err := os.ReadDir(dir)
	if err != nil || len(des) != 1 {
		t.Fatalf("the directory holds %d files (%v), want the key alone", len(des), err)
	}
}

// TestReadRefusesReadableByOthers: a key file its group or the world may
// read is refused, with the fix, and LoadOrCreate leaves it as it is.
func TestReadRefusesReadableByOthers(t *testing.T) {
	for _, perm := range []fs.FileMode{0o640, 0o604, 0o660, 0o644, 0o601} {
		t.Run(fmt.Sprintf("%#o", perm), func(t *testing.T) {
			name := filepath.Join(t.TempDir(), "signing.key")
			text := pemOf(t, newKey(t))
			writeRaw(t, name, text, perm)
			_, err := Read(name)
			if err == nil || errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "chmod 600") {
				t.Fatalf("Read of a %#o key: %v, want it refused with the chmod", perm, err)
			}
			if _, _, err := LoadOrCreate(name); err == nil {
				t.Fatalf("LoadOrCreate of a %#o key succeeded", perm)
			}
			if got, err := os.ReadFile(name); err != nil || !bytes.Equal(got, text) {
				t.Fatalf("the refused key file was changed (%v)", err)
			}
		})
	}
}

// TestReadMissing: a missing key is fs.ErrNotExist, so that callers may
// decide whether to create one.
func TestReadMissing(t *testing.T) {
	if _, err := Read(filepath.Join(t.TempDir(), "signing.key")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Read of a missing key: %v, want fs.ErrNotExist", err)
	}
}

// TestDamagedKeyRefused: a key file cut short (as a crash of a writer
// that wrote in place would leave it), empty, or not a key is an error
// naming the file, never fs.ErrNotExist, and is never replaced.
func TestDamagedKeyRefused(t *testing.T) {
	full := pemOf(t, newKey(t))
	for _, tc := range []struct {
		name string
		text []byte
	}{
		{"Truncated", full[:len(full)/2]},
		{"Empty", nil},
		{"NotAKey", []byte("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := filepath.Join(t.TempDir(), "signing.key")
			writeRaw(t, name, tc.text, 0o600)
			_, err := Read(name)
			if err == nil || errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), name) {
				t.Fatalf("Read of a damaged key: %v, want an error naming %s", err, name)
			}
			if _, _, err := LoadOrCreate(name); err == nil || errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("LoadOrCreate of a damaged key: %v, want an error", err)
			}
			if got, _ := os.ReadFile(name); !bytes.Equal(got, tc.text) {
				t.Fatal("LoadOrCreate replaced a damaged key")
			}
		})
	}
}

// TestWriteNeverReplaces: Write installs a key where there is none and
// refuses, with fs.ErrExist, to replace one, leaving no temporary file.
func TestWriteNeverReplaces(t *testing.T) {
	name := filepath.Join(t.TempDir(), "signing.key")
	first, second := newKey(t), newKey(t)
	if err := Write(name, first); err != nil {
		t.Fatal(err)
	}
	err := Write(name, second)
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Write over a key: %v, want fs.ErrExist", err)
	}
	if got, err := Read(name); err != nil || !got.Equal(first) {
		t.Fatalf("the key after a refused Write: first %v, %v", got.Equal(first), err)
	}
	if l := leftovers(t, name); len(l) != 0 {
		t.Fatalf("Write left %v", l)
	}
	if err := Write(name, ed25519.PrivateKey("short")); err == nil {
		t.Fatal("Write of a malformed key succeeded")
	}
	if err := Write(filepath.Join(t.TempDir(), "missing", "signing.key"), first); err == nil {
		t.Fatal("Write into a missing directory succeeded")
	}
}

// TestLeftoverIgnoredAndRemoved: the temporary file a crash left, be it
// half a key or a whole one never linked, is not taken for the key, and
// is removed once a key is in place.
func TestLeftoverIgnoredAndRemoved(t *testing.T) {
	t.Run("NoKey", func(t *testing.T) {
		name := filepath.Join(t.TempDir(), "signing.key")
		stale := newKey(t)
		text := pemOf(t, stale)
		writeRaw(t, filepath.Join(filepath.Dir(name), tempPrefix(name)+"111"), text[:len(text)/2], 0o600)
		writeRaw(t, filepath.Join(filepath.Dir(name), tempPrefix(name)+"222"), text, 0o600)
		if _, err := Read(name); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Read beside leftovers only: %v, want fs.ErrNotExist", err)
		}
		priv, created, err := LoadOrCreate(name)
		if err != nil || !created || priv.Equal(stale) {
			t.Fatalf("LoadOrCreate beside leftovers: created %v, the leftover's key %v, %v", created, priv.Equal(stale), err)
		}
		if l := leftovers(t, name); len(l) != 0 {
			t.Fatalf("leftovers remain after a key was created: %v", l)
		}
	})
	t.Run("KeyInPlace", func(t *testing.T) {
		name := filepath.Join(t.TempDir(), "signing.key")
		priv := newKey(t)
		if err := Write(name, priv); err != nil {
			t.Fatal(err)
		}
		writeRaw(t, filepath.Join(filepath.Dir(name), tempPrefix(name)+"333"), []byte("-----BEGIN PRIV"), 0o600)
		other := filepath.Join(filepath.Dir(name), ".other.key.tmp-444")
		writeRaw(t, other, []byte("x"), 0o600)
		got, created, err := LoadOrCreate(name)
		if err != nil || created || !got.Equal(priv) {
			t.Fatalf("LoadOrCreate beside a leftover: created %v, same key %v, %v", created, got.Equal(priv), err)
		}
		if l := leftovers(t, name); len(l) != 0 {
			t.Fatalf("leftovers remain: %v", l)
		}
		if _, err := os.Stat(other); err != nil {
			t.Fatalf("another key's temporary file was removed: %v", err)
		}
	})
}

// TestGoroutinesAgree: many goroutines creating one key at once all
// return the same key, and exactly one of them created it. Each round
// starts them together on a new directory.
func TestGoroutinesAgree(t *testing.T) {
	const rounds, callers = 20, 32
	for round := range rounds {
		name := filepath.Join(t.TempDir(), "signing.key")
		start := make(chan struct{})
		keys := make([]ed25519.PrivateKey, callers)
		made := make([]bool, callers)
		errs := make([]error, callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				<-start
				keys[i], made[i], errs[i] = LoadOrCreate(name)
			})
		}
		close(start)
		wg.Wait()
		creators := 0
		for i := range callers {
			if errs[i] != nil {
				t.Fatalf("round %d, caller %d: %v", round, i, errs[i])
			}
			if !keys[i].Equal(keys[0]) {
				t.Fatalf("round %d: callers 0 and %d returned different keys", round, i)
			}
			if made[i] {
				creators++
			}
		}
		if creators != 1 {
			t.Fatalf("round %d: %d callers say they created the key, want 1", round, creators)
		}
		if on, err := Read(name); err != nil || !on.Equal(keys[0]) {
			t.Fatalf("round %d: the key on disk is not the one returned (%v)", round, err)
		}
		if l := leftovers(t, name); len(l) != 0 {
			t.Fatalf("round %d: leftovers %v", round, l)
		}
	}
}

// TestProcessesAgree: processes creating one key at once all print the
// same public key, and exactly one says it created it.
func TestProcessesAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	const procs = 8
	exe, err := os.Executable()
	if err != nil {
		t.Skipf("no test binary to run: %v", err)
	}
	name := filepath.Join(t.TempDir(), "signing.key")
	cmds := make([]*exec.Cmd, procs)
	outs := make([]bytes.Buffer, procs)
	for i := range cmds {
		cmds[i] = exec.Command(exe, "-test.run=^$")
		cmds[i].Env = append(os.Environ(), childEnv+"="+name)
		cmds[i].Stdout, cmds[i].Stderr = &outs[i], &outs[i]
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	creators := 0
	var pub string
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("process %d: %v: %s", i, err, outs[i].String())
		}
		var key string
		var created bool
		if _, err := fmt.Sscanf(outs[i].String(), "%s %t", &key, &created); err != nil {
			t.Fatalf("process %d printed %q: %v", i, outs[i].String(), err)
		}
		if pub == "" {
			pub = key
		}
		if key != pub {
			t.Fatalf("processes 0 and %d use different keys: %s, %s", i, pub, key)
		}
		if created {
			creators++
		}
	}
	if creators != 1 {
		t.Fatalf("%d processes say they created the key, want 1", creators)
	}
	priv, err := Read(name)
	if err != nil || hex.EncodeToString(priv.Public().(ed25519.PublicKey)) != pub {
		t.Fatalf("the key on disk is not the one the processes use (%v)", err)
	}
}

// TestWritePublic replaces the public key file whole, mode 0644, with
// the keys oldest first.
func TestWritePublic(t *testing.T) {
	name := filepath.Join(t.TempDir(), "signing.pub")
	a, b := newKey(t).Public().(ed25519.PublicKey), newKey(t).Public().(ed25519.PublicKey)
	if err := WritePublic(name, a); err != nil {
		t.Fatal(err)
	}
	if err := WritePublic(name, a, b); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(name)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("public key mode %v (%v), want 0644", fi.Mode().Perm(), err)
	}
	text, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := ledger.ParsePublicKeys(text)
	if err != nil || len(keys) != 2 || !keys[0].Equal(a) || !keys[1].Equal(b) {
		t.Fatalf("public keys = %d keys, %v; want a then b", len(keys), err)
	}
	if l := leftovers(t, name); len(l) != 0 {
		t.Fatalf("WritePublic left %v", l)
	}
}
