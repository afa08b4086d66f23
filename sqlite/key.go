package sqlite

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/custody-dev/custody/ledger"
)

// Key file names inside the data directory.
const (
	privateKeyFile = "signing.key"
	publicKeyFile  = "signing.pub"
)

// loadKey returns the checkpoint signing key of dir, creating it on first
// use, and exports its public half to signing.pub.
func loadKey(dir string) (ed25519.PrivateKey, error) {
	priv, err := readPrivateKey(filepath.Join(dir, privateKeyFile))
	if errors.Is(err, fs.ErrNotExist) {
		priv, err = createPrivateKey(dir)
	}
	if err != nil {
		return nil, err
	}
	if err := exportPublicKey(dir, priv.Public().(ed25519.PublicKey)); err != nil {
		return nil, err
	}
	return priv, nil
}

func readPrivateKey(name string) (ed25519.PrivateKey, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("signing key %s is readable by others (mode %#o): chmod 600 it", name, fi.Mode().Perm())
	}
	text, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("read signing key: %w", err)
	}
	priv, err := ledger.ParsePrivateKey(text)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", name, err)
	}
	return priv, nil
}

// createPrivateKey writes a new key to a temporary file and links it into
// place, so that two processes opening the same new directory agree on one
// key and nobody ever reads a half-written file.
func createPrivateKey(dir string) (ed25519.PrivateKey, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate signing key: %w", err)
	}
	text, err := ledger.MarshalPrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("encode signing key: %w", err)
	}
	name := filepath.Join(dir, privateKeyFile)
	tmp, err := writeTemp(dir, privateKeyFile, text)
	if err != nil {
		return nil, fmt.Errorf("write signing key: %w", err)
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, name); errors.Is(err, fs.ErrExist) {
		return readPrivateKey(name) // another process won the race
	} else if err != nil {
		return nil, fmt.Errorf("install signing key: %w", err)
	}
	return priv, syncDir(dir)
}

// exportPublicKey writes signing.pub unless it already holds pub.
func exportPublicKey(dir string, pub ed25519.PublicKey) error {
	text := ledger.MarshalPublicKey(pub)
	name := filepath.Join(dir, publicKeyFile)
	if old, err := os.ReadFile(name); err == nil && bytes.Equal(old, text) {
		return nil
	}
	tmp, err := writeTemp(dir, publicKeyFile, text)
	if err != nil {
		return fmt.Errorf("write public key: %w", err)
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write public key: %w", err)
	}
	if err := os.Rename(tmp, name); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("install public key: %w", err)
	}
	return syncDir(dir)
}

// writeTemp writes data to a new file of mode 0600 in dir, synced to disk,
// and returns its name.
func writeTemp(dir, pattern string, data []byte) (string, error) {
	f, err := os.CreateTemp(dir, "."+pattern+".*")
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
