// Package tempstore opens throwaway SQLite stores whose signing key the
// caller holds: the store of one assurance run, which seals its evidence
// pack with that key.
package tempstore

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/custody-dev/custody/store/sqlite"
)

// Open makes a new SQLite store in a temporary directory with a new
// signing key, and returns it, the key and the function that closes and
// removes it. ctx bounds the opening; now is the store's clock (time.Now when nil).
func Open(ctx context.Context, now func() time.Time) (*sqlite.DB, ed25519.PrivateKey, func() error, error) {
	parent, err := os.MkdirTemp("", "custody-assure-")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("data directory: %w", err)
	}
	dir := filepath.Join(parent, "data")
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err == nil {
		err = sqlite.WriteKey(dir, priv)
	}
	var db *sqlite.DB
	if err == nil {
		db, err = sqlite.Open(ctx, dir, sqlite.Options{Now: now})
	}
	if err != nil {
		os.RemoveAll(parent)
		return nil, nil, nil, err
	}
	release := func() error { return errors.Join(db.Close(), os.RemoveAll(parent)) }
	return db, priv, release, nil
}
