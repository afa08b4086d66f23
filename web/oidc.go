package web

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/identity"
)

// The console's sign-in at the team's OpenID provider: GET oidcStartPath
// sends the browser to the provider, which sends it back to
// OIDCCallbackPath with a code.
const (
	oidcStartPath = "/login/oidc"
	// OIDCCallbackPath is where the provider sends a signed-in browser
	// back: the console's public URL + this is the redirect URI to
	// register at the provider.
	OIDCCallbackPath = "/login/oidc/callback"
	// OIDCSignInLifetime is how long a browser has to sign in at the
	// provider once it was sent there.
	OIDCSignInLifetime = 10 * time.Minute
)

// oidcCookie binds a sign-in at the provider to the browser that started
// it: a random value of which the request's state, nonce and PKCE
// verifier are derived (derive), so the store keeps nothing before anyone
// is signed in, and an answer the provider gave another browser (a forged
// callback, login fixation) does not match. SameSite=Lax, since the
// provider's answer is a cross-site navigation; HttpOnly; only sent to
// the sign-in's own paths.
const oidcCookie = "custody_oidc"

// IdP is the team's OpenID provider as the console signs in with it
// (*identity.Console): the authorization code flow with PKCE and a nonce.
type IdP interface {
	// Issuer is the provider's issuer identifier; RolesClaim the claim
	// whose values make roles.
	Issuer() string
	RolesClaim() string
	// AuthCodeURL returns the provider's authorization endpoint with one
	// sign-in's request.
	AuthCodeURL(ctx context.Context, state, nonce, verifier string) (string, error)
	// Exchange redeems a code and returns whom its verified ID token
	// names: EUNAUTHORIZED when the provider or the ID token is refused,
	// EUNAVAILABLE when the provider cannot be reached.
	Exchange(ctx context.Context, code, verifier, nonce string) (identity.Person, error)
}

var _ IdP = (*identity.Console)(nil)

// ConsoleIdP is the console's sign-in at the team's OpenID provider. A
// person one of whose roles claim values is one of Operators is an
// operator, else one of Auditors an auditor; anyone else is refused.
type ConsoleIdP struct {
	Provider            IdP
	Operators, Auditors []string
}

// roleOf returns the role the values of the roles claim give, and the
// values that give it; "" for none.
func (c *ConsoleIdP) roleOf(values []string) (Role, []string) {
	for _, r := range []struct {
		role Role
		of   []string
	}{{RoleOperator, c.Operators}, {RoleAuditor, c.Auditors}} {
		var matched []string
		for _, v := range values {
			if slices.Contains(r.of, v) && !slices.Contains(matched, v) {
				matched = append(matched, v)
			}
		}
		if len(matched) > 0 {
			return r.role, matched
		}
	}
	return "", nil
}

// holder returns the principal of a kept session the provider signed in,
// while the console still trusts that provider and the kept values of the
// roles claim still give the session's role.
func (c *ConsoleIdP) holder(d grantDoc) (Principal, bool) {
	if c == nil || c.Provider.Issuer() != d.Issuer {
		return Principal{}, false
	}
	if role, _ := c.roleOf(d.Roles); role != d.Role {
		return Principal{}, false
	}
	return Principal{ID: d.Principal, Role: d.Role, Name: d.Name}, true
}

// idpLabel names the provider on the sign-in page: its host; "" without
// one.
func (s *Server) idpLabel() string {
	if s.cfg.IdP == nil {
		return ""
	}
	u, err := url.Parse(s.cfg.IdP.Provider.Issuer())
	if err != nil {
		return s.cfg.IdP.Provider.Issuer()
	}
	return u.Host
}

// mountIdP serves the sign-in at the provider, when there is one.
func (s *Server) mountIdP(mux *http.ServeMux) {
	mux.HandleFunc("GET "+ConnectCallbackPath, s.handleConnectCallback)
	if s.cfg.IdP == nil {
		return
	}
	mux.HandleFunc("GET "+oidcStartPath, s.handleOIDCStart)
	mux.HandleFunc("GET "+OIDCCallbackPath, s.handleOIDCCallback)
}

// derive returns the value of one use (state, nonce, pkce) of the
// sign-in whose cookie holds pre: HMAC-SHA256 keyed by pre, so that the
// state the provider sees and logs tells nothing of the verifier.
func derive(pre, use string) string {
	m := hmac.New(sha256.New, []byte(pre))
	m.Write([]byte(use))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// handleOIDCStart serves GET /login/oidc: a fresh sign-in, bound to this
// browser by its cookie, and the browser sent to the provider.
func (s *Server) handleOIDCStart(w http.ResponseWriter, r *http.Request) {
	pre := secret()
	to, err := s.cfg.IdP.Provider.AuthCodeURL(r.Context(), derive(pre, "state"), derive(pre, "nonce"), derive(pre, "pkce"))
	if err != nil {
		s.log.Error("console sign-in at the provider cannot start", "issuer", s.cfg.IdP.Provider.Issuer(), "err", err)
		s.refuseSignIn(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: oidcCookie, Value: pre, Path: oidcStartPath, HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode, MaxAge: int(OIDCSignInLifetime / time.Second)})
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, to, http.StatusFound)
}

// handleOIDCCallback serves GET /login/oidc/callback, the provider's
// answer: it must be for the sign-in this browser's cookie started (the
// state), its code is redeemed with the sign-in's PKCE verifier and its
// ID token must carry the sign-in's nonce. A person the roles claim
// gives neither role is refused with 403 and gets no session; anyone
// else gets a session, kept in the store as a token's is.
func (s *Server) handleOIDCCallback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	c, cookieErr := r.Cookie(oidcCookie)
	// The sign-in is over, whatever its outcome: its cookie goes.
	http.SetCookie(w, &http.Cookie{Name: oidcCookie, Path: oidcStartPath, HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteLaxMode, MaxAge: -1})
	switch {
	case q.Get("error") != "":
		s.log.Warn("console sign-in refused by the provider", "error", q.Get("error"))
		s.renderLogin(w, r, http.StatusUnauthorized, loginView{Problem: "The identity provider did not sign you in: " +
			q.Get("error") + describe(q.Get("error_description"))})
		return
	case cookieErr != nil || c.Value == "":
		s.log.Warn("console sign-in refused: no sign-in started in this browser")
		s.renderLogin(w, r, http.StatusBadRequest, loginView{Problem: "This sign-in was not started in this browser, or took longer than " +
			OIDCSignInLifetime.String() + ". Please start again."})
		return
	case subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(derive(c.Value, "state"))) != 1:
		s.log.Warn("console sign-in refused: the state is not this browser's sign-in's")
		s.renderLogin(w, r, http.StatusForbidden, loginView{Problem: "This answer of the identity provider is not for the sign-in this browser started. Please start again."})
		return
	case q.Get("code") == "":
		s.renderLogin(w, r, http.StatusBadRequest, loginView{Problem: "The identity provider sent no sign-in code. Please start again."})
		return
	}
	person, err := s.cfg.IdP.Provider.Exchange(r.Context(), q.Get("code"), derive(c.Value, "pkce"), derive(c.Value, "nonce"))
	if err != nil {
		s.log.Warn("console sign-in refused", "issuer", s.cfg.IdP.Provider.Issuer(), "err", err)
		s.refuseSignIn(w, r, err)
		return
	}
	s.signInPerson(w, r, person)
}

// describe is the provider's error_description, shortened, as a clause.
func describe(d string) string {
	if d == "" {
		return "."
	}
	if r := []rune(d); len(r) > 200 {
		d = string(r[:200]) + "…"
	}
	return " (" + d + ")."
}

// signInPerson opens a session for whom the provider signed in, when the
// roles claim gives them a role, and sends the browser on to the console.
func (s *Server) signInPerson(w http.ResponseWriter, r *http.Request, person identity.Person) {
	role, matched := s.cfg.IdP.roleOf(person.Roles)
	if role == "" {
		s.log.Warn("console sign-in refused: no console role", "principal", person.ID(), "name", person.Name)
		s.renderLogin(w, r, http.StatusForbidden, loginView{Problem: "You are signed in at the identity provider as " +
			nameOf(person) + ", but its " + s.cfg.IdP.Provider.RolesClaim() + " claim gives you no role here: neither operator nor auditor. Ask whoever runs custody to add you to one."})
		return
	}
	p := Principal{ID: person.ID(), Role: role, Name: person.Name}
	id, g, err := s.sessions.open(r.Context(), grant{p: p, issuer: person.Issuer, roles: matched})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !s.startSession(w, r, id, g) {
		return
	}
	s.log.Info("console login", "principal", p.ID, "name", p.Name, "role", p.Role, "via", "oidc")
	// A page, not a redirect: the browser came here from the provider's
	// site, and only a navigation from this page sends the session's
	// SameSite=Strict cookie.
	s.renderLogin(w, r, http.StatusOK, loginView{SignedIn: &p})
}

// nameOf is how the refusal page names a person.
func nameOf(p identity.Person) string {
	if p.Name != "" {
		return p.Name + " (" + p.ID() + ")"
	}
	return p.ID()
}

// refuseSignIn shows the sign-in page with why the provider's sign-in
// failed: what the provider or the ID token check said, or that the
// provider could not be reached; an internal failure only as such.
func (s *Server) refuseSignIn(w http.ResponseWriter, r *http.Request, err error) {
	status, msg := http.StatusInternalServerError, "The sign-in failed on custody's side; the log says why."
	switch custody.ErrorKind(err) {
	case custody.EUNAUTHORIZED:
		status, msg = http.StatusUnauthorized, custody.ErrorMessage(err)+"."
	case custody.EUNAVAILABLE:
		status, msg = http.StatusServiceUnavailable, "The identity provider could not be reached: "+custody.ErrorMessage(err)+"."
	case custody.EINVALID:
		msg = "custody's sign-in at the identity provider is misconfigured: " + custody.ErrorMessage(err) + "."
	}
	s.renderLogin(w, r, status, loginView{Problem: msg})
}
