package keyfile

import (
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// secretType is the PEM block type of a symmetric key file.
const secretType = "CUSTODY SECRET KEY"

// ReadSecret returns the symmetric key of size bytes in the file name,
// refused as Read refuses a signing key: readable by others (with the
// chmod that fixes it), damaged, or of another size. A missing file's
// error wraps fs.ErrNotExist.
func ReadSecret(name string, size int) ([]byte, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("key %s is readable by others (mode %#o): chmod 600 it", name, fi.Mode().Perm())
	}
	text, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("read key: %w", err)
	}
	block, _ := pem.Decode(text)
	switch {
	case block == nil:
		return nil, fmt.Errorf("key %s: no PEM block found", name)
	case block.Type != secretType:
		return nil, fmt.Errorf("key %s: a %q PEM block, want %q", name, block.Type, secretType)
	case len(block.Bytes) != size:
		return nil, fmt.Errorf("key %s: %d bytes, want %d", name, len(block.Bytes), size)
	}
	return block.Bytes, nil
}

// LoadOrCreateSecret returns the symmetric key of size bytes in the file
// name, creating a random one there first when there is none, and whether
// this call created it: the same promises as LoadOrCreate (one creator
// among racing callers, a refused file never replaced, the directory
// must exist).
func LoadOrCreateSecret(name string, size int) (key []byte, created bool, err error) {
	key, err = ReadSecret(name, size)
	if !errors.Is(err, fs.ErrNotExist) {
		if err == nil {
			removeLeftovers(name)
		}
		return key, false, err
	}
	key = make([]byte, size)
	if _, err := rand.Read(key); err != nil {
		return nil, false, fmt.Errorf("generate key: %w", err)
	}
	err = install(name, pem.EncodeToMemory(&pem.Block{Type: secretType, Bytes: key}), "key")
	if errors.Is(err, fs.ErrExist) {
		key, err = ReadSecret(name, size)
		return key, false, err
	}
	if err != nil {
		return nil, false, err
	}
	return key, true, nil
}
