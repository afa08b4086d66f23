package upstream

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/keyfile"
)

// TokenStore keeps the upstreams' access tokens, sealed: bytes it stores
// and returns as they are, never reads, and never puts on the ledger
// (a token is no evidence, and must not be in anyone's copy of it).
type TokenStore interface {
	// UpstreamToken returns the sealed token kept for the upstream named
	// name; ENOTFOUND when there is none, EUNAVAILABLE when the store
	// cannot be read.
	UpstreamToken(ctx context.Context, name string) ([]byte, error)
	// PutUpstreamToken keeps sealed as the upstream's token, replacing
	// any, and returns once it is written; EUNAVAILABLE when it is not.
	PutUpstreamToken(ctx context.Context, name string, sealed []byte) error
}

// TokenKeyFile is the file, beside the checkpoint signing key in the data
// directory, of the key that seals the tokens: like the signing key it
// never enters the database, so a copy of the database alone holds no
// usable token.
const TokenKeyFile = "upstream-tokens.key"

// tokenKeySize is the size of the sealing key: AES-256.
const tokenKeySize = 32

// sealVersion is the first byte of a sealed token: the format below.
const sealVersion = 1

// TokenVault keeps tokens in a TokenStore sealed with AES-256-GCM: a
// sealed token is sealVersion, a random nonce and the ciphertext of the
// token's JSON, authenticated with the upstream's name and what the
// token was obtained for, so that a token moved to another upstream's
// row, or kept under another configuration, does not open.
type TokenVault struct {
	store TokenStore
	aead  cipher.AEAD
}

// NewTokenVault returns a vault on store sealing with key (32 bytes).
func NewTokenVault(store TokenStore, key []byte) (*TokenVault, error) {
	if len(key) != tokenKeySize {
		return nil, fmt.Errorf("token key: %d bytes, want %d", len(key), tokenKeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("token key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("token key: %w", err)
	}
	return &TokenVault{store: store, aead: aead}, nil
}

// OpenTokenVault returns a vault on store sealing with the key in
// keyFile (mode 0600), created there on first use as the signing key is
// (package keyfile). Instances sharing one store share tokens only when
// they share this file too; with another key each obtains its own.
func OpenTokenVault(store TokenStore, keyFile string) (*TokenVault, error) {
	key, _, err := keyfile.LoadOrCreateSecret(keyFile, tokenKeySize)
	if err != nil {
		return nil, fmt.Errorf("upstream token key: %w", err)
	}
	return NewTokenVault(store, key)
}

// errNoToken says no token is kept for an upstream.
var errNoToken = errors.New("no token kept")

// load returns the token kept for server under fingerprint.
func (v *TokenVault) load(ctx context.Context, server, fingerprint string) (token, error) {
	sealed, err := v.store.UpstreamToken(ctx, server)
	if custody.ErrorKind(err) == custody.ENOTFOUND {
		return token{}, errNoToken
	}
	if err != nil {
		return token{}, fmt.Errorf("read the kept token: %w", err)
	}
	n := v.aead.NonceSize()
	if len(sealed) < 1+n || sealed[0] != sealVersion {
		return token{}, errors.New("the kept token is not in a format this custody reads")
	}
	plain, err := v.aead.Open(nil, sealed[1:1+n], sealed[1+n:], sealedWith(server, fingerprint))
	if err != nil {
		return token{}, errors.New("the kept token does not open: sealed with another key, for another configuration, or altered")
	}
	var t token
	if err := json.Unmarshal(plain, &t); err != nil || t.Access == "" {
		return token{}, errors.New("the kept token is damaged")
	}
	return t, nil
}

// save keeps t for server under fingerprint.
func (v *TokenVault) save(ctx context.Context, server, fingerprint string, t token) error {
	plain, err := json.Marshal(t)
	if err != nil {
		return err
	}
	nonce := make([]byte, v.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	sealed := append([]byte{sealVersion}, nonce...)
	sealed = v.aead.Seal(sealed, nonce, plain, sealedWith(server, fingerprint))
	if err := v.store.PutUpstreamToken(ctx, server, sealed); err != nil {
		return fmt.Errorf("keep the token: %w", err)
	}
	return nil
}

// sealedWith is the additional data a token of server under fingerprint
// is sealed with.
func sealedWith(server, fingerprint string) []byte {
	return []byte("custody upstream token\x00" + server + "\x00" + fingerprint)
}
