package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
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
)

// The state namespaces of the console's sign-ins.
const (
	nsLoginCodes    = "console_login_codes"
	nsLoginCodeUses = "console_login_code_uses"
	nsSessions      = "console_sessions"
)

// sessions keeps the console's sign-in state in the store's state: the
// single-use login codes and the sessions they opened, each under the
// SHA-256 of its secret, so the store holds nothing a browser could
// present. Being in the store, a session outlives a restart, and every
// gateway sharing a PostgreSQL store honours it, its sign-out and its
// code's single use alike. A grant names its principal by id and role;
// one the tokens no longer give that role opens nothing, nor does one
// the OpenID provider signed in once the console trusts another provider
// or the values of the roles claim it kept no longer give that role.
type sessions struct {
	state    custody.StateStore
	tokens   Tokens
	idp      *ConsoleIdP
	now      func() time.Time
	lifetime time.Duration
}

// grant is what a code or a session stands for: a principal, until when,
// and, for someone the OpenID provider signed in, its issuer and the
// values of the roles claim that gave the role.
type grant struct {
	p       Principal
	expires time.Time
	issuer  string
	roles   []string
}

// grantDoc is a grant as the state keeps it.
type grantDoc struct {
	Principal string `json:"principal"`
	Role      Role   `json:"role"`
	Expires   string `json:"expires"`
	// Revoked is set when the session was signed out.
	Revoked bool `json:"revoked,omitempty"`
	// Issuer, Name and Roles are set for a sign-in at the OpenID
	// provider.
	Issuer string   `json:"issuer,omitempty"`
	Name   string   `json:"name,omitempty"`
	Roles  []string `json:"roles,omitempty"`
}

// newSessions returns the sign-ins kept in state, for principals of
// tokens and of idp (nil: none), whose sessions last lifetime
// (DefaultSessionLifetime when zero or less).
func newSessions(state custody.StateStore, tokens Tokens, idp *ConsoleIdP, now func() time.Time, lifetime time.Duration) *sessions {
	if lifetime <= 0 {
		lifetime = DefaultSessionLifetime
	}
	return &sessions{state: state, tokens: tokens, idp: idp, now: now, lifetime: lifetime}
}

// secret returns 32 random bytes in unpadded base64url: 256 bits, which
// no one guesses.
func secret() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// stateKey is the key a secret's grant is kept under: its SHA-256.
func stateKey(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// mintCode returns a new single-use code standing for p, and when it
// stops working.
func (s *sessions) mintCode(ctx context.Context, p Principal) (string, time.Time, error) {
	code := secret()
	g := grant{p: p, expires: s.now().Add(LoginCodeLifetime)}
	if err := s.put(ctx, nsLoginCodes, code, g, false); err != nil {
		return "", time.Time{}, err
	}
	return code, g.expires, nil
}

// peekCode returns the principal code stands for while it is unused and
// unexpired, without using it up.
func (s *sessions) peekCode(ctx context.Context, code string) (Principal, bool, error) {
	g, ok, err := s.get(ctx, nsLoginCodes, code)
	if !ok || err != nil {
		return Principal{}, false, err
	}
	used, err := s.state.State(ctx, nsLoginCodeUses, stateKey(code))
	if err == nil && string(used) != "0" {
		return Principal{}, false, nil
	}
	if err != nil && custody.ErrorKind(err) != custody.ENOTFOUND {
		return Principal{}, false, fmt.Errorf("read a login code's use: %w", err)
	}
	return g.p, true, nil
}

// exchange uses up code and opens a session for its principal, returning
// the session id and its grant. A code works once, across every gateway
// sharing the store: a used, expired or unknown code opens nothing.
func (s *sessions) exchange(ctx context.Context, code string) (string, grant, bool, error) {
	g, ok, err := s.get(ctx, nsLoginCodes, code)
	if !ok || err != nil {
		return "", grant{}, false, err
	}
	// The first to count the code's use is the one it opens a session for.
	n, err := s.state.IncrState(ctx, nsLoginCodeUses, stateKey(code), 1)
	if err != nil {
		return "", grant{}, false, fmt.Errorf("use a login code: %w", err)
	}
	if n != 1 {
		return "", grant{}, false, nil
	}
	id, sg, err := s.open(ctx, grant{p: g.p})
	return id, sg, err == nil, err
}

// open starts a session for g's principal (and issuer and roles), from
// now for the sessions' lifetime, and returns its id and grant.
func (s *sessions) open(ctx context.Context, g grant) (string, grant, error) {
	id := secret()
	g.expires = s.now().Add(s.lifetime)
	if err := s.put(ctx, nsSessions, id, g, false); err != nil {
		return "", grant{}, err
	}
	return id, g, nil
}

// lookup returns the principal of the live session id.
func (s *sessions) lookup(ctx context.Context, id string) (Principal, bool, error) {
	if id == "" {
		return Principal{}, false, nil
	}
	g, ok, err := s.get(ctx, nsSessions, id)
	return g.p, ok, err
}

// revoke ends the session id; it reports whether one was live.
func (s *sessions) revoke(ctx context.Context, id string) (bool, error) {
	g, ok, err := s.get(ctx, nsSessions, id)
	if !ok || err != nil {
		return false, err
	}
	return true, s.put(ctx, nsSessions, id, g, true)
}

// put keeps g under the hash of secret in ns.
func (s *sessions) put(ctx context.Context, ns, secret string, g grant, revoked bool) error {
	doc, err := json.Marshal(grantDoc{Principal: g.p.ID, Role: g.p.Role, Expires: custody.FormatTime(g.expires), Revoked: revoked,
		Issuer: g.issuer, Name: g.p.Name, Roles: g.roles})
	if err != nil {
		return fmt.Errorf("encode a console sign-in: %w", err)
	}
	if err := s.state.PutState(ctx, ns, stateKey(secret), doc); err != nil {
		return fmt.Errorf("keep a console sign-in: %w", err)
	}
	return nil
}

// get returns the grant kept under the hash of secret in ns while it is
// unexpired, not revoked, and its principal still holds its role: by a
// token, or by the roles claim of the provider that signed it in.
func (s *sessions) get(ctx context.Context, ns, secret string) (grant, bool, error) {
	raw, err := s.state.State(ctx, ns, stateKey(secret))
	if custody.ErrorKind(err) == custody.ENOTFOUND {
		return grant{}, false, nil
	}
	if err != nil {
		return grant{}, false, fmt.Errorf("read a console sign-in: %w", err)
	}
	var d grantDoc
	if err := json.Unmarshal(raw, &d); err != nil {
		return grant{}, false, fmt.Errorf("read a console sign-in: %w", err)
	}
	expires, err := time.Parse(custody.TimeFormat, d.Expires)
	if err != nil {
		return grant{}, false, fmt.Errorf("read a console sign-in: its expiry %q: %w", d.Expires, err)
	}
	p, held := s.tokens.holder(d.Principal, d.Role)
	if d.Issuer != "" {
		p, held = s.idp.holder(d)
	}
	if d.Revoked || !held || !s.now().Before(expires) {
		return grant{}, false, nil
	}
	return grant{p: p, expires: expires, issuer: d.Issuer, roles: d.Roles}, true, nil
}

// holder returns the principal of id, when a token still gives it role
// and that role signs in to the console.
func (t Tokens) holder(id string, role Role) (Principal, bool) {
	if role == RoleAgent {
		return Principal{}, false
	}
	for _, p := range t {
		if p.ID == id && p.Role == role {
			return p, true
		}
	}
	return Principal{}, false
}
