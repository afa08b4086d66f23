package web

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/custody-dev/custody"
)

// Role is what a bearer token may do.
type Role string

// Roles. An agent may call tools and list them; an operator may read
// everything and decide approvals; an auditor may read the ledger, the
// approvals and the verification status. An agent can never decide an
// approval.
const (
	RoleAgent    Role = "agent"
	RoleOperator Role = "operator"
	RoleAuditor  Role = "auditor"
)

// Principal is who holds a token, or whom the team's OpenID provider
// signed in to the console: then ID is ISSUER#SUBJECT and Name the
// display name the provider gave.
type Principal struct {
	ID   string `json:"id"`
	Role Role   `json:"role"`
	Name string `json:"name,omitempty"`
}

// Tokens maps a bearer token to its principal.
type Tokens map[string]Principal

// sessionCookie is the console's session cookie. It holds a random
// session id, never a token, HttpOnly so that scripts never see it.
const sessionCookie = "custody_session"

// ParseTokens builds Tokens from three comma-separated lists of id:token
// (as in CUSTODY_AGENT_TOKENS, CUSTODY_OPERATOR_TOKENS and
// CUSTODY_AUDITOR_TOKENS). An error names the bad entry; a token may
// appear only once across all lists.
func ParseTokens(agent, operator, auditor string) (Tokens, error) {
	t := Tokens{}
	for _, l := range []struct {
		role Role
		list string
	}{{RoleAgent, agent}, {RoleOperator, operator}, {RoleAuditor, auditor}} {
		if err := t.addList(l.role, l.list); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// addList adds every id:token of a comma-separated list with role.
func (t Tokens) addList(role Role, list string) error {
	for i, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if err := t.Add(role, item); err != nil {
			return fmt.Errorf("%s tokens, entry %d: %w", role, i+1, err)
		}
	}
	return nil
}

// Add adds one id:token entry with role. The id must be non-empty and
// free of spaces; the token at least 16 characters, so a guess is
// hopeless; a token may not be given twice.
func (t Tokens) Add(role Role, entry string) error {
	id, token, ok := strings.Cut(entry, ":")
	switch {
	case !ok:
		return fmt.Errorf("want id:token, got %q", redact(entry))
	case id == "" || strings.ContainsAny(id, " \t"):
		return fmt.Errorf("id %q must be non-empty without spaces", id)
	case len(token) < 16:
		return fmt.Errorf("token of %q is shorter than 16 characters", id)
	}
	if p, dup := t[token]; dup {
		return fmt.Errorf("token of %q is already given to %s %q", id, p.Role, p.ID)
	}
	t[token] = Principal{ID: id, Role: role}
	return nil
}

// redact hides all but the first characters of something that may hold a
// secret, so an error message can name it.
func redact(s string) string {
	if len(s) <= 4 {
		return s
	}
	return s[:4] + "…"
}

// Lookup returns the principal holding token. Every token is compared in
// constant time, so the time taken does not tell how close a guess was.
func (t Tokens) Lookup(token string) (Principal, bool) {
	var found Principal
	ok := 0
	for k, p := range t {
		if subtle.ConstantTimeCompare([]byte(k), []byte(token)) == 1 {
			found, ok = p, 1
		}
	}
	return found, ok == 1 && token != ""
}

// authenticate returns the principal of r: the holder of the bearer token
// in the Authorization header, or else of the console session named by
// the session cookie. err is a failure to read the sessions.
func (s *Server) authenticate(r *http.Request) (Principal, bool, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, _ := strings.Cut(h, " ")
		if !strings.EqualFold(scheme, "Bearer") {
			return Principal{}, false, nil
		}
		p, ok := s.cfg.Tokens.Lookup(strings.TrimSpace(tok))
		if !ok && s.cfg.Bearer != nil && strings.TrimSpace(tok) != "" {
			return s.bearer(r.Context(), strings.TrimSpace(tok))
		}
		return p, ok, nil
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		return s.sessions.lookup(r.Context(), c.Value)
	}
	return Principal{}, false, nil
}

type principalKey struct{}

// PrincipalFrom returns the principal that authenticated the request whose
// context is ctx. Apps mounted under /apps/ use it to check roles.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// require wraps h so that only a principal holding one of roles reaches it:
// no or an unknown token or session is EUNAUTHORIZED (401), a known token of another
// role EDENIED (403), and both are logged.
func (s *Server) require(h http.HandlerFunc, roles ...Role) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, ok, err := s.authenticate(r)
		if !ok && err == nil {
			err = custody.Errorf(custody.EUNAUTHORIZED, "a valid bearer token is required")
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if !slices.Contains(roles, p.Role) {
			s.log.Warn("refused: role not allowed", "principal", p.ID, "role", p.Role,
				"method", r.Method, "path", r.URL.Path, "request_id", requestID(w))
			s.writeError(w, r, custody.Errorf(custody.EDENIED, "the %s role may not do this", p.Role))
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	}
}

// allRoles lists every role: for reads that any principal may do.
func allRoles() []Role { return []Role{RoleAgent, RoleOperator, RoleAuditor} }

// readers lists the roles that may read approvals and the ledger.
func readers() []Role { return []Role{RoleOperator, RoleAuditor} }
