// Package keyfile reads a checkpoint signing key from its file, as both
// stores keep it: PEM, readable by its owner alone.
package keyfile

import (
	"crypto/ed25519"
	"fmt"
	"os"

	"github.com/custody-dev/custody/ledger"
)

// Read returns the ed25519 private key in the file name. A file that
// others may read is refused with the chmod that fixes it; a missing
// file's error wraps fs.ErrNotExist.
func Read(name string) (ed25519.PrivateKey, error) {
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
