package idptest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"sync"
	"testing"

	"github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// RotateKey makes the provider sign with a new key from now on, as an
// IdP rotating its keys does; its key set publishes the new key and the
// one before, so tokens already issued still verify.
func (o *OP) RotateKey(t testing.TB) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	o.st.keys.rotate(key)
}

// rotation is the provider's own signing keys once rotated: the current
// and, published beside it, the one before.
type rotation struct {
	mu        sync.Mutex
	n         int
	cur, prev *rsaKey
}

func (r *rotation) rotate(key *rsa.PrivateKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	r.prev, r.cur = r.cur, &rsaKey{id: fmt.Sprintf("rotated-%d", r.n), key: key}
}

// SigningKey implements op.Storage: the current key once rotated.
func (s *store) SigningKey(ctx context.Context) (op.SigningKey, error) {
	s.keys.mu.Lock()
	cur := s.keys.cur
	s.keys.mu.Unlock()
	if cur == nil {
		return s.Storage.SigningKey(ctx)
	}
	return cur, nil
}

// KeySet implements op.Storage: the current key and the one before.
func (s *store) KeySet(ctx context.Context) ([]op.Key, error) {
	s.keys.mu.Lock()
	cur, prev := s.keys.cur, s.keys.prev
	s.keys.mu.Unlock()
	if cur == nil {
		return s.Storage.KeySet(ctx)
	}
	keys := []op.Key{publicOf{cur}}
	if prev != nil {
		return append(keys, publicOf{prev}), nil
	}
	original, err := s.Storage.KeySet(ctx)
	return append(keys, original...), err
}

// rsaKey is an RS256 signing key.
type rsaKey struct {
	id  string
	key *rsa.PrivateKey
}

func (k *rsaKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k *rsaKey) Key() any                                    { return k.key }
func (k *rsaKey) ID() string                                  { return k.id }

// publicOf is the published half of a key.
type publicOf struct{ k *rsaKey }

func (p publicOf) ID() string                         { return p.k.id }
func (p publicOf) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (p publicOf) Use() string                        { return "sig" }
func (p publicOf) Key() any                           { return &p.k.key.PublicKey }
