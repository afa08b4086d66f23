package assure

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/custody-dev/custody/internal/keyfile"
)

// KeyFile is the name of the assessor's signing key in the data
// directory: PEM, readable by its owner alone.
const KeyFile = "assure-signing.key"

// LoadKey returns the assessor's signing key in dir, creating it (mode
// 0600, and dir 0700 when it does not exist) the first time, and whether
// it was created. Every pack signed from dir carries the same key, so its
// fingerprint can be published once. A key file others may read is
// refused; runs racing to create it agree on one (keyfile.LoadOrCreate).
func LoadKey(dir string) (ed25519.PrivateKey, bool, error) {
	if dir == "" {
		return nil, false, errors.New("assessor key: no data directory")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, fmt.Errorf("assessor key: data directory: %w", err)
	}
	priv, created, err := keyfile.LoadOrCreate(filepath.Join(dir, KeyFile))
	if err != nil {
		return nil, false, fmt.Errorf("assessor key: %w", err)
	}
	return priv, created, nil
}
