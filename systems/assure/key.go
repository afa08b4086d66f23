package assure

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/custody-dev/custody/internal/keyfile"
	"github.com/custody-dev/custody/ledger"
)

// KeyFile is the name of the assessor's signing key in the data
// directory: PEM, readable by its owner alone.
const KeyFile = "assure-signing.key"

// LoadKey returns the assessor's signing key in dir, creating it (mode
// 0600, and dir 0700 when it does not exist) the first time, and whether
// it was created. Every pack signed from dir carries the same key, so its
// fingerprint can be published once. A key file others may read is
// refused.
func LoadKey(dir string) (ed25519.PrivateKey, bool, error) {
	if dir == "" {
		return nil, false, errors.New("assessor key: no data directory")
	}
	name := filepath.Join(dir, KeyFile)
	priv, err := keyfile.Read(name)
	if err == nil {
		return priv, false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, false, fmt.Errorf("assessor key: %w", err)
	}
	priv, err = createKey(dir, name)
	if errors.Is(err, fs.ErrExist) { // created meanwhile by another run
		priv, err = keyfile.Read(name)
		return priv, false, err
	}
	return priv, err == nil, err
}

// createKey writes a new key to name, never over an existing file.
func createKey(dir, name string) (ed25519.PrivateKey, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("assessor key: data directory: %w", err)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("assessor key: generate: %w", err)
	}
	pem, err := ledger.MarshalPrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("assessor key: encode: %w", err)
	}
	tmp, err := os.CreateTemp(dir, KeyFile+".*")
	if err != nil {
		return nil, fmt.Errorf("assessor key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(pem); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("assessor key: write: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("assessor key: write: %w", err)
	}
	// A hard link publishes the complete file, and fails when the key
	// already exists: a crash never leaves a half-written key.
	if err := os.Link(tmp.Name(), name); err != nil {
		return nil, fmt.Errorf("assessor key: %w", err)
	}
	return priv, nil
}
