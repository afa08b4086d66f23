// Package keyfile reads and creates checkpoint signing keys in files, as
// the stores and the assessor keep them: PEM, readable by their owner
// alone, and never seen half-written.
//
// A key is written whole to a temporary file of mode 0600 beside its
// name, synced, and hard-linked into place, which fails when the name
// exists; the directory is synced after. A reader therefore finds either
// no key or a complete one, and of processes racing to create the same
// key exactly one wins and the others read its key. A crash leaves at
// most a temporary file (.NAME.tmp-*), which is never read as the key and
// is removed once a key is in place.
package keyfile

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/custody-dev/custody/ledger"
)

// Read returns the ed25519 private key in the file name. A file that
// others may read is refused with the chmod that fixes it; a missing
// file's error wraps fs.ErrNotExist; a damaged one (truncated, say) is
// an error naming the file.
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

// LoadOrCreate returns the key in the file name, creating a new one there
// first when there is none, and whether this call created it. Of callers
// racing to create it, in this process or others, exactly one creates it
// and every one returns that key. A file that Read refuses is an error,
// never replaced. The directory must exist.
func LoadOrCreate(name string) (priv ed25519.PrivateKey, created bool, err error) {
	priv, err = Read(name)
	if !errors.Is(err, fs.ErrNotExist) {
		if err == nil {
			removeLeftovers(name)
		}
		return priv, false, err
	}
	_, priv, err = ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, false, fmt.Errorf("generate signing key: %w", err)
	}
	err = Write(name, priv)
	if errors.Is(err, fs.ErrExist) {
		// Another caller installed its key first: its key is the key.
		priv, err = Read(name)
		return priv, false, err
	}
	if err != nil {
		return nil, false, err
	}
	return priv, true, nil
}

// Write installs priv as the key in the file name, durably, and never
// over an existing file: when name exists the error wraps fs.ErrExist and
// the file is left as it is.
func Write(name string, priv ed25519.PrivateKey) error {
	text, err := ledger.MarshalPrivateKey(priv)
	if err != nil {
		return fmt.Errorf("encode signing key: %w", err)
	}
	return install(name, text, "signing key")
}

// install puts text in the file name (mode 0600), durably and never over
// an existing file (the error then wraps fs.ErrExist); what names the key
// in errors.
func install(name string, text []byte, what string) error {
	tmp, err := writeTemp(name, text, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", what, err)
	}
	err = os.Link(tmp, name)
	os.Remove(tmp)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		if _, serr := os.Lstat(name); serr == nil {
			// The winner's clean-up took the temporary file before
			// the link: the key exists all the same.
			err = fmt.Errorf("%s: %w", name, fs.ErrExist)
		}
	}
	if err != nil {
		return fmt.Errorf("install %s: %w", what, err)
	}
	removeLeftovers(name)
	return syncDir(filepath.Dir(name))
}

// WritePublic replaces the file name with keys in PEM, oldest first, mode
// 0644, durably: a reader finds the old file or the new one, never part
// of either.
func WritePublic(name string, keys ...ed25519.PublicKey) error {
	var text []byte
	for _, k := range keys {
		text = append(text, ledger.MarshalPublicKey(k)...)
	}
	tmp, err := writeTemp(name, text, 0o644)
	if err != nil {
		return fmt.Errorf("write public key: %w", err)
	}
	if err := os.Rename(tmp, name); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("install public key: %w", err)
	}
	return syncDir(filepath.Dir(name))
}

// tempPrefix is how the temporary files of name begin.
func tempPrefix(name string) string { return "." + filepath.Base(name) + ".tmp-" }

// writeTemp writes data to a new file of mode perm beside name, synced to
// disk, and returns its name.
func writeTemp(name string, data []byte, perm fs.FileMode) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(name), tempPrefix(name)+"*")
	if err != nil {
		return "", err
	}
	err = f.Chmod(perm)
	if err == nil {
		_, err = f.Write(data)
	}
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

// removeLeftovers removes the temporary files a crash left beside the
// key name, which exists: a caller still writing one loses its race
// whether it is removed or not (its link fails either way; see
// LoadOrCreate). It does its best: a leftover it cannot remove is
// harmless.
func removeLeftovers(name string) {
	dir, prefix := filepath.Dir(name), tempPrefix(name)
	des, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, de := range des {
		if de.Type().IsRegular() && strings.HasPrefix(de.Name(), prefix) {
			os.Remove(filepath.Join(dir, de.Name()))
		}
	}
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
