package postgres

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/keyfile"
	"github.com/custody-dev/custody/ledger"
)

// loadKey returns the signing key in file, creating it (mode 0600) when
// absent, and writes its public half beside it (see PublicKeyFile).
func loadKey(file string) (ed25519.PrivateKey, error) {
	if file == "" {
		return nil, custody.Errorf(custody.EINVALID, "postgres: a signing key file is required (Options.KeyFile): give every instance the same one")
	}
	priv, err := readKey(file)
	if errors.Is(err, fs.ErrNotExist) {
		priv, err = createKey(file)
	}
	if err != nil {
		return nil, err
	}
	pub := ledger.MarshalPublicKey(priv.Public().(ed25519.PublicKey))
	if old, err := os.ReadFile(publicKeyFile(file)); err == nil && bytes.Equal(old, pub) {
		return priv, nil
	}
	if err := os.WriteFile(publicKeyFile(file), pub, 0o644); err != nil {
		return nil, fmt.Errorf("write public key: %w", err)
	}
	return priv, nil
}

// publicKeyFile is where the public half of the key in file is written:
// signing.key gives signing.pub.
func publicKeyFile(file string) string {
	return strings.TrimSuffix(file, filepath.Ext(file)) + ".pub"
}

func readKey(file string) (ed25519.PrivateKey, error) { return keyfile.Read(file) }

// createKey writes a new key to file, unless another process created it
// first, in which case that one is read.
func createKey(file string) (ed25519.PrivateKey, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate signing key: %w", err)
	}
	text, err := ledger.MarshalPrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("encode signing key: %w", err)
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return readKey(file)
	}
	if err != nil {
		return nil, fmt.Errorf("create signing key: %w", err)
	}
	_, err = f.Write(text)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(file)
		return nil, fmt.Errorf("write signing key: %w", err)
	}
	return priv, nil
}

// checkKey records pub as the ledger's signing key on first use and
// refuses a key that is not the recorded one: checkpoints signed with two
// keys would not verify against either.
func checkKey(ctx context.Context, pool *pgxpool.Pool, pub ed25519.PublicKey) error {
	text := string(ledger.MarshalPublicKey(pub))
	const ins = `INSERT INTO signing_key (id, public_key) VALUES (1, $1) ON CONFLICT (id) DO NOTHING`
	if _, err := pool.Exec(ctx, ins, text); err != nil {
		return unavailable("record the signing key", err)
	}
	var stored string
	if err := pool.QueryRow(ctx, `SELECT public_key FROM signing_key WHERE id = 1`).Scan(&stored); err != nil {
		return unavailable("read the signing key", err)
	}
	if stored != text {
		return custody.Errorf(custody.EINVALID,
			"the signing key is not the one this ledger's checkpoints are signed with: give every instance the same key file")
	}
	return nil
}

// storedKey returns the public key recorded for the ledger's checkpoints.
func storedKey(ctx context.Context, pool *pgxpool.Pool) (ed25519.PublicKey, error) {
	var text string
	if err := pool.QueryRow(ctx, `SELECT public_key FROM signing_key WHERE id = 1`).Scan(&text); err != nil {
		return nil, unavailable("read the signing key", err)
	}
	pub, err := ledger.ParsePublicKey([]byte(text))
	if err != nil {
		return nil, unavailable("read the signing key", err)
	}
	return pub, nil
}

// ensureLedgerID gives the ledger an id on first use (every instance that
// races to do so agrees on the first one written) and returns it.
func ensureLedgerID(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	var b [ledger.LedgerIDLen / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	const set = `UPDATE signing_key SET ledger_id = $1 WHERE id = 1 AND ledger_id = ''`
	if _, err := pool.Exec(ctx, set, hex.EncodeToString(b[:])); err != nil {
		return "", unavailable("record the ledger id", err)
	}
	var id string
	if err := pool.QueryRow(ctx, `SELECT ledger_id FROM signing_key WHERE id = 1`).Scan(&id); err != nil {
		return "", unavailable("read the ledger id", err)
	}
	return id, nil
}
