package web_test

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody/web"
)

// browserClient is an HTTP client that keeps the answers of redirects and
// sends the cookies it was given, as the test says.
type browserClient struct {
	t   *testing.T
	e   *env
	url string // the server's base URL
	hc  *http.Client
	csr string // the login form's anti-forgery cookie
}

func newBrowserClient(t *testing.T, e *env) *browserClient {
	return newBrowserClientAt(t, e, e.srv)
}

// newBrowserClientAt is newBrowserClient for the server srv, which may
// be another server than e's.
func newBrowserClientAt(t *testing.T, e *env, srv *httptest.Server) *browserClient {
	hc := srv.Client()
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &browserClient{t: t, e: e, url: srv.URL, hc: hc}
}

// send sends req and returns the answer with its body read.
func (b *browserClient) send(req *http.Request) (*http.Response, string) {
	b.t.Helper()
	res, err := b.hc.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		b.t.Fatalf("read body: %v", err)
	}
	return res, string(body)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// page opens the sign-in page at path and keeps its anti-forgery value.
func (b *browserClient) page(path string) (*http.Response, string) {
	b.t.Helper()
	req, _ := http.NewRequest("GET", b.url+path, nil)
	res, body := b.send(req)
	m := csrfField.FindStringSubmatch(body)
	c := cookieNamed(res, "custody_login_csrf")
	if m == nil || c == nil || c.Value != m[1] || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
		b.t.Fatalf("GET %s: %d, anti-forgery field %v, cookie %+v", path, res.StatusCode, m, c)
	}
	b.csr = c.Value
	return res, body
}

// post posts the sign-in form with form's fields and the kept
// anti-forgery cookie and value.
func (b *browserClient) post(form url.Values) (*http.Response, string) {
	b.t.Helper()
	if !form.Has("csrf") {
		form.Set("csrf", b.csr)
	}
	req, _ := http.NewRequest("POST", b.url+"/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if b.csr != "" {
		req.AddCookie(&http.Cookie{Name: "custody_login_csrf", Value: b.csr})
	}
	return b.send(req)
}

// withSession requests path with the session cookie c.
func (b *browserClient) withSession(method, path string, c *http.Cookie) int {
	b.t.Helper()
	req, _ := http.NewRequest(method, b.url+path, nil)
	if c != nil {
		req.AddCookie(c)
	}
	res, _ := b.send(req)
	return res.StatusCode
}

func cookieNamed(res *http.Response, name string) *http.Cookie {
	for _, c := range res.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// loginLink asks the server for a fresh sign-in link as the holder of
// token and returns its code.
func loginLink(t *testing.T, e *env, token string) string {
	t.Helper()
	res := e.do("POST", "/v1/console/login-link", token, nil)
	var link struct {
		Path      string `json:"path"`
		ExpiresAt string `json:"expires_at"`
	}
	if err := json.Unmarshal(res.Body, &link); err != nil || res.Status != 200 || !strings.HasPrefix(link.Path, "/login?code=") {
		t.Fatalf("login link: %d %s", res.Status, res.Body)
	}
	u, _ := url.Parse(link.Path)
	return u.Query().Get("code")
}

// signIn opens a session with a fresh login code and returns its cookie.
func signIn(t *testing.T, b *browserClient, token string) *http.Cookie {
	t.Helper()
	code := loginLink(t, b.e, token)
	b.page("/login?code=" + url.QueryEscape(code))
	res, body := b.post(url.Values{"code": {code}})
	c := cookieNamed(res, "custody_session")
	if res.StatusCode != http.StatusSeeOther || c == nil {
		t.Fatalf("sign in: %d %s", res.StatusCode, body)
	}
	return c
}

func TestLoginCode(t *testing.T) {
	e := newEnv(t)
	b := newBrowserClient(t, e)
	code := loginLink(t, e, operatorToken)
	if strings.Contains(code, operatorToken) {
		t.Fatalf("the code holds the token: %s", code)
	}
	res, body := b.page("/login?code=" + url.QueryEscape(code))
	if res.StatusCode != 200 || !strings.Contains(body, `data-testid="login-principal">op-1<`) || cookieNamed(res, "custody_session") != nil {
		t.Fatalf("login page: %d, session cookie %v\n%s", res.StatusCode, cookieNamed(res, "custody_session"), body)
	}
	res, body = b.post(url.Values{"code": {code}})
	c := cookieNamed(res, "custody_session")
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/" || c == nil {
		t.Fatalf("exchange: %d %s", res.StatusCode, body)
	}
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure || c.Path != "/" || c.MaxAge != int(web.DefaultSessionLifetime/time.Second) {
		t.Errorf("session cookie %+v", c)
	}
	for _, secret := range []string{operatorToken, code} {
		if strings.Contains(c.Value, secret) {
			t.Errorf("the session cookie %q carries a long-lived secret or the code", c.Value)
		}
	}
	if st := b.withSession("GET", "/v1/console", c); st != 200 {
		t.Errorf("with the session: %d", st)
	}
	req, _ := http.NewRequest("GET", e.srv.URL+"/v1/console", nil)
	req.AddCookie(c)
	_, who := b.send(req)
	if !strings.Contains(who, `"principal":{"id":"op-1","role":"operator"}`) {
		t.Errorf("the session is not op-1's: %s", who)
	}

	t.Run("ErrReused", func(t *testing.T) {
		res, body := b.post(url.Values{"code": {code}})
		if res.StatusCode != http.StatusUnauthorized || cookieNamed(res, "custody_session") != nil || !strings.Contains(body, "already used") {
			t.Errorf("second use of a code: %d %v %s", res.StatusCode, res.Cookies(), body)
		}
		_, body = b.page("/login?code=" + url.QueryEscape(code))
		if !strings.Contains(body, "expired or was already used") || strings.Contains(body, `name="code"`) {
			t.Errorf("the page of a used code offers it again:\n%s", body)
		}
	})
	t.Run("ErrExpired", func(t *testing.T) {
		code := loginLink(t, e, operatorToken)
		e.clock.Add(web.LoginCodeLifetime)
		res, body := b.post(url.Values{"code": {code}})
		if res.StatusCode != http.StatusUnauthorized || cookieNamed(res, "custody_session") != nil {
			t.Errorf("expired code: %d %s", res.StatusCode, body)
		}
	})
	t.Run("ErrUnknown", func(t *testing.T) {
		res, _ := b.post(url.Values{"code": {"forged-code-0123456789abcdef0123456789abcdef"}})
		if res.StatusCode != http.StatusUnauthorized || cookieNamed(res, "custody_session") != nil {
			t.Errorf("forged code: %d", res.StatusCode)
		}
	})
	t.Run("ErrAgent", func(t *testing.T) {
		if res := e.do("POST", "/v1/console/login-link", agentToken, nil); res.Status != http.StatusForbidden {
			t.Errorf("an agent got a login link: %d %s", res.Status, res.Body)
		}
	})
	t.Run("ErrLinkFromSession", func(t *testing.T) {
		// A session that could mint codes could renew itself for ever.
		if st := b.withSession("POST", "/v1/console/login-link", c); st != http.StatusForbidden {
			t.Errorf("a console session minted a login link: %d", st)
		}
	})
}

// TestLoginGETDoesNotLogIn: neither a token nor a code in a link signs
// anyone in, and opening a code's page does not use the code up.
func TestLoginGETDoesNotLogIn(t *testing.T) {
	e := newEnv(t)
	b := newBrowserClient(t, e)
	res, body := b.page("/login?token=" + operatorToken)
	if cookieNamed(res, "custody_session") != nil || strings.Contains(body, operatorToken) || !strings.Contains(body, `name="token"`) {
		t.Errorf("GET /login?token=: %d %v\n%s", res.StatusCode, res.Cookies(), body)
	}
	code := loginLink(t, e, operatorToken)
	for range 2 {
		if res, _ := b.page("/login?code=" + url.QueryEscape(code)); cookieNamed(res, "custody_session") != nil {
			t.Fatalf("GET with a code set a session")
		}
	}
	if res, body := b.post(url.Values{"code": {code}}); res.StatusCode != http.StatusSeeOther {
		t.Errorf("the code after two page views: %d %s", res.StatusCode, body)
	}
}

// TestLoginCSRF: a sign-in post without the page's anti-forgery value,
// as another site would send to sign a victim in as the attacker, opens
// nothing and leaves the code unused.
func TestLoginCSRF(t *testing.T) {
	e := newEnv(t)
	b := newBrowserClient(t, e)
	code := loginLink(t, e, operatorToken)
	for _, tc := range []struct {
		name, cookie, field string
	}{{"ErrNoCookie", "", "x"}, {"ErrNoField", "value-0123456789", ""}, {"ErrMismatch", "value-0123456789", "value-9876543210"}} {
		t.Run(tc.name, func(t *testing.T) {
			b.csr = tc.cookie
			res, _ := b.post(url.Values{"code": {code}, "csrf": {tc.field}})
			if res.StatusCode != http.StatusForbidden || cookieNamed(res, "custody_session") != nil {
				t.Errorf("forged sign-in post: %d %v", res.StatusCode, res.Cookies())
			}
		})
	}
	b.page("/login")
	if res, _ := b.post(url.Values{"code": {code}}); res.StatusCode != http.StatusSeeOther {
		t.Errorf("the code after refused forgeries: %d", res.StatusCode)
	}
}

func TestLoginToken(t *testing.T) {
	e := newEnv(t)
	b := newBrowserClient(t, e)
	for _, tc := range []struct {
		name, token string
		status      int
	}{{"OK", auditorToken, http.StatusSeeOther}, {"ErrAgent", agentToken, http.StatusUnauthorized}, {"ErrUnknown", "not-a-token-0123456789", http.StatusUnauthorized}} {
		t.Run(tc.name, func(t *testing.T) {
			b.page("/login")
			res, body := b.post(url.Values{"token": {tc.token}})
			c := cookieNamed(res, "custody_session")
			if res.StatusCode != tc.status || (c != nil) != (tc.status == http.StatusSeeOther) {
				t.Fatalf("token sign-in: %d %v %s", res.StatusCode, res.Cookies(), body)
			}
			if c != nil && strings.Contains(c.Value, tc.token) {
				t.Errorf("the cookie carries the token")
			}
		})
	}
}

func TestLogoutRevokes(t *testing.T) {
	e := newEnv(t)
	b := newBrowserClient(t, e)
	c := signIn(t, b, operatorToken)
	other := signIn(t, b, operatorToken)
	if st := b.withSession("GET", "/v1/approvals", c); st != 200 {
		t.Fatalf("before logout: %d", st)
	}
	req, _ := http.NewRequest("POST", e.srv.URL+"/logout", nil)
	req.AddCookie(c)
	res, _ := b.send(req)
	if gone := cookieNamed(res, "custody_session"); res.StatusCode != http.StatusSeeOther || gone == nil || gone.MaxAge >= 0 {
		t.Errorf("logout: %d, cookie %+v", res.StatusCode, gone)
	}
	if st := b.withSession("GET", "/v1/approvals", c); st != http.StatusUnauthorized {
		t.Errorf("the old cookie after logout: %d, want 401", st)
	}
	if st := b.withSession("GET", "/v1/approvals", other); st != 200 {
		t.Errorf("another session after this one's logout: %d", st)
	}
}

// TestLoginAgainEndsEarlierSession: signing in again in a browser ends
// the session its cookie held.
func TestLoginAgainEndsEarlierSession(t *testing.T) {
	e := newEnv(t)
	b := newBrowserClient(t, e)
	first := signIn(t, b, operatorToken)
	code := loginLink(t, e, operatorToken)
	b.page("/login?code=" + url.QueryEscape(code))
	req, _ := http.NewRequest("POST", e.srv.URL+"/login", strings.NewReader(url.Values{"code": {code}, "csrf": {b.csr}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: "custody_login_csrf", Value: b.csr})
	req.AddCookie(first)
	res, _ := b.send(req)
	second := cookieNamed(res, "custody_session")
	if second == nil || second.Value == first.Value {
		t.Fatalf("second sign-in: %d, cookie %+v", res.StatusCode, second)
	}
	if st := b.withSession("GET", "/v1/console", first); st != http.StatusUnauthorized {
		t.Errorf("the earlier session after signing in again: %d, want 401", st)
	}
	if st := b.withSession("GET", "/v1/console", second); st != 200 {
		t.Errorf("the new session: %d", st)
	}
}

func TestSessionExpires(t *testing.T) {
	e := newEnvWith(t, func(c *web.Config) { c.SessionLifetime = time.Hour })
	b := newBrowserClient(t, e)
	c := signIn(t, b, operatorToken)
	if c.MaxAge != 3600 {
		t.Errorf("cookie max age %d, want the configured hour", c.MaxAge)
	}
	e.clock.Add(59 * time.Minute)
	if st := b.withSession("GET", "/v1/console", c); st != 200 {
		t.Errorf("before expiry: %d", st)
	}
	e.clock.Add(time.Minute)
	if st := b.withSession("GET", "/v1/console", c); st != http.StatusUnauthorized {
		t.Errorf("after expiry: %d, want 401", st)
	}
}

// TestSessionCrossSite: a cross-site request carrying the session cookie
// may not change anything.
func TestSessionCrossSite(t *testing.T) {
	e := newEnv(t)
	b := newBrowserClient(t, e)
	c := signIn(t, b, operatorToken)
	req, _ := http.NewRequest("POST", e.srv.URL+"/v1/approvals/x/decision", strings.NewReader(`{"decision":"approved"}`))
	req.AddCookie(c)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if res, _ := b.send(req); res.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site decision: %d", res.StatusCode)
	}
}

// TestSessionCookieSecureOverTLS: over TLS the session cookie is Secure.
func TestSessionCookieSecureOverTLS(t *testing.T) {
	var cfg web.Config
	newEnvWith(t, func(c *web.Config) { cfg = *c })
	s, err := web.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	get := httptest.NewRequest("GET", "https://custody.example/login", nil)
	get.TLS = &tls.ConnectionState{}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, get)
	m := csrfField.FindStringSubmatch(rec.Body.String())
	if m == nil {
		t.Fatalf("no anti-forgery field: %s", rec.Body)
	}
	form := url.Values{"csrf": {m[1]}, "token": {operatorToken}}
	post := httptest.NewRequest("POST", "https://custody.example/login", strings.NewReader(form.Encode()))
	post.TLS = &tls.ConnectionState{}
	post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	post.AddCookie(&http.Cookie{Name: "custody_login_csrf", Value: m[1]})
	rec = httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, post)
	c := cookieNamed(rec.Result(), "custody_session")
	if rec.Code != http.StatusSeeOther || c == nil || !c.Secure || !c.HttpOnly {
		t.Errorf("TLS sign-in: %d, cookie %+v", rec.Code, c)
	}
}
