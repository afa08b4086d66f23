package postgres

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
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
// Instances starting together agree on one key (keyfile.LoadOrCreate).
func loadKey(file string) (ed25519.PrivateKey, error) {
	if file == "" {
		return nil, custody.Errorf(custody.EINVALID, "postgres: a signing key file is required (Options.KeyFile): give every instance the same one")
	}
	priv, _, err := keyfile.LoadOrCreate(file)
	if err != nil {
		return nil, err
	}
	pub := priv.Public().(ed25519.PublicKey)
	if old, err := os.ReadFile(publicKeyFile(file)); err == nil && bytes.Equal(old, ledger.MarshalPublicKey(pub)) {
		return priv, nil
	}
	if err := keyfile.WritePublic(publicKeyFile(file), pub); err != nil {
		return nil, err
	}
	return priv, nil
}

// publicKeyFile is where the public half of the key in file is written:
// signing.key gives signing.pub.
func publicKeyFile(file string) string {
	return strings.TrimSuffix(file, filepath.Ext(file)) + ".pub"
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
	return readLedgerID(ctx, pool)
}

// readLedgerID returns the ledger's id as recorded.
func readLedgerID(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	var id string
	if err := pool.QueryRow(ctx, `SELECT ledger_id FROM signing_key WHERE id = 1`).Scan(&id); err != nil {
		return "", unavailable("read the ledger id", err)
	}
	return id, nil
}
