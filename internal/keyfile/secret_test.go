package keyfile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestLoadOrCreateSecret(t *testing.T) {
	name := filepath.Join(t.TempDir(), "tokens.key")
	if _, err := ReadSecret(name, 32); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadSecret of no file: %v, want fs.ErrNotExist", err)
	}
	key, created, err := LoadOrCreateSecret(name, 32)
	if err != nil || !created || len(key) != 32 {
		t.Fatalf("LoadOrCreateSecret = %d bytes, %v, %v; want 32 new bytes", len(key), created, err)
	}
	if fi, _ := os.Stat(name); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %#o, want 0600", fi.Mode().Perm())
	}
	again, created, err := LoadOrCreateSecret(name, 32)
	if err != nil || created || !bytes.Equal(again, key) {
		t.Fatalf("second LoadOrCreateSecret = %v, %v: want the same key, not created", created, err)
	}
	if _, err := ReadSecret(name, 16); err == nil || !strings.Contains(err.Error(), "want 16") {
		t.Fatalf("ReadSecret of the wrong size: %v", err)
	}
}

func TestSecretRefused(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, text string
		perm       fs.FileMode
		want       string
	}{
		{"ReadableByOthers", "", 0o644, "chmod 600"},
		{"NotPEM", "garbage", 0o600, "no PEM block"},
		{"SigningKey", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", 0o600, "want \"CUSTODY SECRET KEY\""},
	} {
		t.Run(c.name, func(t *testing.T) {
			name := filepath.Join(dir, c.name)
			writeRaw(t, name, []byte(c.text), c.perm)
			_, _, err := LoadOrCreateSecret(name, 32)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("LoadOrCreateSecret: %v, want an error saying %q", err, c.want)
			}
			if raw, _ := os.ReadFile(name); string(raw) != c.text {
				t.Fatal("a refused key file was replaced")
			}
		})
	}
}

func TestSecretGoroutinesAgree(t *testing.T) {
	name := filepath.Join(t.TempDir(), "tokens.key")
	keys := make([][]byte, 8)
	creators := make([]bool, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			var err error
			if keys[i], creators[i], err = LoadOrCreateSecret(name, 32); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	n := 0
	for i := range keys {
		if !bytes.Equal(keys[i], keys[0]) {
			t.Fatal("callers racing to create the key got different keys")
		}
		if creators[i] {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d callers say they created the key, want 1", n)
	}
}
