package web

import (
	"context"
	"crypto/subtle"
	_ "embed"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/custody-dev/custody"
)

// csrfCookie carries the login form's anti-forgery value: a POST to
// /login must send the same value in the form and in this cookie, which
// another site can neither read nor set.
const csrfCookie = "custody_login_csrf"

//go:embed login.html
var loginHTML string

// loginPage is the sign-in page: a confirmation button for a login code,
// or the token form.
var loginPage = template.Must(template.New("login").Parse(loginHTML))

// loginView is what the sign-in page shows.
type loginView struct {
	CSRF    string
	Code    string
	For     Principal
	Problem string
	// IdP names the OpenID provider the page offers to sign in at, if
	// any; SignedIn is who it has just signed in, for the page that
	// takes them on to the console.
	IdP      string
	SignedIn *Principal
}

// LoginLink mints a single-use login code for the operator or auditor
// whose id is principalID and returns the path of its link
// ("/login?code=…") and when it stops working. The link carries no
// token: opening it shows a button that exchanges the code for a
// session.
func (s *Server) LoginLink(ctx context.Context, principalID string) (string, time.Time, error) {
	for _, p := range s.cfg.Tokens {
		if p.ID == principalID && p.Role != RoleAgent {
			return s.loginLink(ctx, p)
		}
	}
	return "", time.Time{}, custody.Errorf(custody.ENOTFOUND, "no operator or auditor %q", principalID)
}

func (s *Server) loginLink(ctx context.Context, p Principal) (string, time.Time, error) {
	code, expires, err := s.sessions.mintCode(ctx, p)
	if err != nil {
		return "", time.Time{}, err
	}
	return "/login?code=" + url.QueryEscape(code), expires, nil
}

// loginLinkResponse is the body of POST /v1/console/login-link.
type loginLinkResponse struct {
	Path      string `json:"path"`
	ExpiresAt string `json:"expires_at"`
}

// handleLoginLink serves POST /v1/console/login-link: a fresh sign-in link
// for the holder of the bearer token, to open on another device or after
// the printed one expired. A console session may not mint one: a session
// that could renew itself would never expire.
func (s *Server) handleLoginLink(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") == "" {
		s.writeError(w, r, custody.Errorf(custody.EDENIED, "a sign-in link is made with a bearer token, not a console session"))
		return
	}
	p, _ := PrincipalFrom(r.Context())
	path, expires, err := s.loginLink(r.Context(), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, loginLinkResponse{Path: path, ExpiresAt: custody.FormatTime(expires)})
}

// handleLoginPage serves GET /login. It never signs anyone in: with a
// live code it shows whom the code is for and a button that posts it;
// otherwise the token form. A token in the URL is ignored.
func (s *Server) handleLoginPage(w http.ResponseWriter, r *http.Request) {
	v := loginView{}
	if code := r.URL.Query().Get("code"); code != "" {
		p, ok, err := s.sessions.peekCode(r.Context(), code)
		switch {
		case err != nil:
			s.writeError(w, r, err)
			return
		case ok:
			v.Code, v.For = code, p
		default:
			v.Problem = "This sign-in link has expired or was already used. Ask for a new one, or sign in with a token."
		}
	}
	s.renderLogin(w, r, http.StatusOK, v)
}

// renderLogin writes the sign-in page with a fresh anti-forgery value.
func (s *Server) renderLogin(w http.ResponseWriter, r *http.Request, status int, v loginView) {
	v.CSRF = secret()
	v.IdP = s.idpLabel()
	http.SetCookie(w, &http.Cookie{
		Name: csrfCookie, Value: v.CSRF, Path: "/login", HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode, MaxAge: int(LoginCodeLifetime / time.Second),
	})
	pageHeaders(w, status)
	if err := loginPage.Execute(w, v); err != nil {
		s.log.Error("render the sign-in page", "err", err)
	}
}

// pageHeaders writes the headers of the console's server-rendered pages
// (sign-in, connection) and status: HTML never cached, framed or sent a
// referrer, its forms posting to the console only.
func pageHeaders(w http.ResponseWriter, status int) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; form-action 'self'")
	w.WriteHeader(status)
}

// handleLogin serves POST /login: a form carrying the anti-forgery value
// and either a login code or an operator's or auditor's token. Either
// opens a session; the browser gets its id in an HttpOnly, SameSite=Strict
// cookie (Secure over TLS) and goes to the console.
func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if err := r.ParseForm(); err != nil || !s.sameForm(r) {
		s.log.Warn("console login refused: the form's anti-forgery value does not match")
		s.renderLogin(w, r, http.StatusForbidden, loginView{Problem: "The sign-in form had expired or was not sent from this page. Please try again."})
		return
	}
	id, g, problem, err := s.signIn(r.Context(), r.PostForm.Get("code"), r.PostForm.Get("token"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if problem != "" {
		s.renderLogin(w, r, http.StatusUnauthorized, loginView{Problem: problem})
		return
	}
	if !s.startSession(w, r, id, g) {
		return
	}
	s.log.Info("console login", "principal", g.p.ID, "role", g.p.Role)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// startSession gives the browser the cookie of the session id, ending
// the session its old cookie named; false when that failed and the
// error is written.
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, id string, g grant) bool {
	if old, err := r.Cookie(sessionCookie); err == nil {
		// The browser's earlier session ends with this one's start.
		if _, err := s.sessions.revoke(r.Context(), old.Value); err != nil {
			s.writeError(w, r, err)
			return false
		}
	}
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Path: "/login", MaxAge: -1})
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: id, Path: "/", HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode,
		Expires: g.expires, MaxAge: int(g.expires.Sub(s.cfg.Now()) / time.Second),
	})
	return true
}

// sameForm reports whether the form's anti-forgery value is the cookie's.
func (s *Server) sameForm(r *http.Request) bool {
	c, err := r.Cookie(csrfCookie)
	form := r.PostForm.Get("csrf")
	return err == nil && c.Value != "" && subtle.ConstantTimeCompare([]byte(c.Value), []byte(form)) == 1
}

// signIn opens a session for a login code, or else for a token. problem
// says why none was opened; err is a failure of the server.
func (s *Server) signIn(ctx context.Context, code, token string) (id string, g grant, problem string, err error) {
	if code != "" {
		id, g, ok, err := s.sessions.exchange(ctx, code)
		if !ok && err == nil {
			s.log.Warn("console login refused: unknown, used or expired code")
			problem = "This sign-in link has expired or was already used. Ask for a new one, or sign in with a token."
		}
		return id, g, problem, err
	}
	p, ok := s.cfg.Tokens.Lookup(strings.TrimSpace(token))
	if !ok || p.Role == RoleAgent {
		s.log.Warn("console login refused", "known", ok, "role", p.Role)
		return "", grant{}, "That is not an operator or auditor token.", nil
	}
	id, g, err = s.sessions.open(ctx, grant{p: p})
	if err != nil {
		return "", grant{}, "", fmt.Errorf("console login of %s: %w", p.ID, err)
	}
	return id, g, "", nil
}

// handleLogout serves POST /logout: the session ends on the server, so
// its cookie opens nothing any more, and the browser forgets it.
func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		live, err := s.sessions.revoke(r.Context(), c.Value)
		if err != nil {
			// The session may still be live: say so rather than pretend.
			s.writeError(w, r, err)
			return
		}
		if live {
			s.log.Info("console logout")
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Path: "/", HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
