package web

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"sync"
	"time"

	"github.com/custody-dev/custody"
)

// Console sign-in defaults.
const (
	// DefaultSessionLifetime is how long a console session lasts when
	// Config.SessionLifetime is zero: a working day.
	DefaultSessionLifetime = 12 * time.Hour
	// LoginCodeLifetime is how long a login link's code may be exchanged
	// for a session.
	LoginCodeLifetime = 10 * time.Minute
	// maxSessions bounds the live sessions and the live codes, each, so
	// that memory stays bounded whatever the number of sign-ins.
	maxSessions = 10000
)

// sessions holds the console's sign-in state in memory: the single-use
// login codes not yet exchanged and the sessions they opened. Only the
// SHA-256 of a code or a session id is kept, so the table itself holds
// nothing a browser could present. A restart signs every console out.
type sessions struct {
	now      func() time.Time
	lifetime time.Duration

	mu       sync.Mutex
	codes    map[[32]byte]grant
	sessions map[[32]byte]grant
}

// grant is what a code or a session stands for: a principal, until when.
type grant struct {
	p       Principal
	expires time.Time
}

// newSessions returns an empty table whose sessions last lifetime
// (DefaultSessionLifetime when zero or less).
func newSessions(now func() time.Time, lifetime time.Duration) *sessions {
	if lifetime <= 0 {
		lifetime = DefaultSessionLifetime
	}
	return &sessions{now: now, lifetime: lifetime, codes: map[[32]byte]grant{}, sessions: map[[32]byte]grant{}}
}

// secret returns 32 random bytes in unpadded base64url: 256 bits, which
// no one guesses.
func secret() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// mintCode returns a new single-use code standing for p, and when it
// stops working.
func (s *sessions) mintCode(p Principal) (string, time.Time, error) {
	code := secret()
	expires := s.now().Add(LoginCodeLifetime)
	if err := s.put(s.codes, code, grant{p, expires}); err != nil {
		return "", time.Time{}, err
	}
	return code, expires, nil
}

// peekCode returns the principal code stands for while it is unused and
// unexpired, without using it up.
func (s *sessions) peekCode(code string) (Principal, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.codes[sha256.Sum256([]byte(code))]
	return g.p, ok && s.now().Before(g.expires)
}

// exchange uses up code and opens a session for its principal, returning
// the session id and its expiry. A code works once: a used, expired or
// unknown code opens nothing.
func (s *sessions) exchange(code string) (string, grant, bool, error) {
	s.mu.Lock()
	key := sha256.Sum256([]byte(code))
	g, ok := s.codes[key]
	delete(s.codes, key)
	s.mu.Unlock()
	if !ok || !s.now().Before(g.expires) {
		return "", grant{}, false, nil
	}
	id, sg, err := s.open(g.p)
	return id, sg, err == nil, err
}

// open starts a session for p and returns its id and grant.
func (s *sessions) open(p Principal) (string, grant, error) {
	id := secret()
	g := grant{p, s.now().Add(s.lifetime)}
	if err := s.put(s.sessions, id, g); err != nil {
		return "", grant{}, err
	}
	return id, g, nil
}

// put stores g under the hash of key in table, after dropping what has
// expired; it refuses when table is still full.
func (s *sessions) put(table map[[32]byte]grant, key string, g grant) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(table) >= maxSessions {
		now := s.now()
		for k, old := range table {
			if !now.Before(old.expires) {
				delete(table, k)
			}
		}
	}
	if len(table) >= maxSessions {
		return custody.Errorf(custody.EUNAVAILABLE, "too many console sign-ins at once; try again later")
	}
	table[sha256.Sum256([]byte(key))] = g
	return nil
}

// lookup returns the principal of the live session id.
func (s *sessions) lookup(id string) (Principal, bool) {
	if id == "" {
		return Principal{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := sha256.Sum256([]byte(id))
	g, ok := s.sessions[key]
	if ok && !s.now().Before(g.expires) {
		delete(s.sessions, key)
		return Principal{}, false
	}
	return g.p, ok
}

// revoke ends the session id; it reports whether one was live.
func (s *sessions) revoke(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := sha256.Sum256([]byte(id))
	_, ok := s.sessions[key]
	delete(s.sessions, key)
	return ok
}
