package sqlite

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/custody-dev/custody/internal/keyfile"
	"github.com/custody-dev/custody/ledger"
)

// Key file names inside the data directory.
const (
	privateKeyFile = "signing.key"
	publicKeyFile  = "signing.pub"
)

// readKeyIfAny returns the checkpoint signing key of dir, or nil when
// there is none: whether one may be created depends on the ledger.
func readKeyIfAny(dir string) (ed25519.PrivateKey, error) {
	priv, err := readPrivateKey(filepath.Join(dir, privateKeyFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return priv, err
}

func readPrivateKey(name string) (ed25519.PrivateKey, error) { return keyfile.Read(name) }

// createPrivateKey gives dir a new signing key, durably, unless another
// process created one first, in which case that one is returned
// (keyfile.LoadOrCreate): nobody ever reads a half-written key.
func createPrivateKey(dir string) (ed25519.PrivateKey, error) {
	priv, _, err := keyfile.LoadOrCreate(filepath.Join(dir, privateKeyFile))
	return priv, err
}

// readPublicKeys returns the keys in dir's signing.pub, oldest first;
// none when it is missing.
func readPublicKeys(dir string) ([]ed25519.PublicKey, error) {
	text, err := os.ReadFile(filepath.Join(dir, publicKeyFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read public key: %w", err)
	}
	keys, err := ledger.ParsePublicKeys(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, publicKeyFile), err)
	}
	return keys, nil
}

// exportPublicKeys writes signing.pub: every key the ledger was signed
// with, oldest first, the one in force last, so that one file verifies
// an export across key rotations. It leaves a file that already ends with
// pub as it is.
func exportPublicKeys(dir string, pub ed25519.PublicKey) ([]ed25519.PublicKey, error) {
	keys, err := readPublicKeys(dir)
	if err == nil && len(keys) > 0 && keys[len(keys)-1].Equal(pub) {
		return keys, nil
	}
	keys = []ed25519.PublicKey{pub}
	return keys, writePublicKeys(dir, keys)
}

func writePublicKeys(dir string, keys []ed25519.PublicKey) error {
	return keyfile.WritePublic(filepath.Join(dir, publicKeyFile), keys...)
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

// WriteKey gives a new data directory dir the checkpoint signing key
// priv, so that the caller holds the signer of the ledger Open then
// creates there (mode 0700 for dir, 0600 for the key). It refuses a
// directory that already has a key.
func WriteKey(dir string, priv ed25519.PrivateKey) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	if err := keyfile.Write(filepath.Join(dir, privateKeyFile), priv); err != nil {
		return fmt.Errorf("write the signing key: %w", err)
	}
	return nil
}
