package web_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/custody-dev/custody/identity"
	"github.com/custody-dev/custody/internal/idptest"
	"github.com/custody-dev/custody/web"
)

// redirect is the callback the test provider knows custody's console
// client by; the tests open it on whichever server they sign in to.
const redirect = "https://custody.example.com" + web.OIDCCallbackPath

// startIdP runs a provider with ana (in ops) and custody's console
// client, and returns it with the console's sign-in as operators: ops.
func startIdP(t *testing.T) (*idptest.OP, *web.ConsoleIdP) {
	t.Helper()
	idp := idptest.Start(t, "")
	idp.AddUser(idptest.User{ID: "u-ana", Username: "ana", Password: "ana-password", Name: "Ana", Groups: []string{"ops"}})
	idp.AddConsoleClient(idptest.ConsoleClient{ID: "custody-console", Secret: "s", RedirectURIs: []string{redirect}})
	return idp, &web.ConsoleIdP{Provider: console(t, idp.Issuer), Operators: []string{"ops"}}
}

func console(t *testing.T, issuer string) *identity.Console {
	t.Helper()
	c, err := identity.NewConsole(identity.ConsoleConfig{Issuer: issuer, ClientID: "custody-console", ClientSecret: "s", RedirectURL: redirect})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// idpSignIn signs ana in at the provider through b and returns the
// session cookie and the sign-in cookie custody set on the way.
func idpSignIn(t *testing.T, b *browserClient, idp *idptest.OP) (session, pre *http.Cookie) {
	t.Helper()
	req, _ := http.NewRequest("GET", b.url+"/login/oidc", nil)
	res, _ := b.send(req)
	pre = cookieNamed(res, "custody_oidc")
	if res.StatusCode != http.StatusFound || pre == nil {
		t.Fatalf("GET /login/oidc: %d, cookie %+v", res.StatusCode, pre)
	}
	answer := idp.Login(t, nil, res.Header.Get("Location"), "ana", "ana-password")
	req, _ = http.NewRequest("GET", b.url+answer.Path+"?"+answer.RawQuery, nil)
	req.AddCookie(pre)
	res, body := b.send(req)
	session = cookieNamed(res, "custody_session")
	if res.StatusCode != 200 || session == nil || !strings.Contains(body, `http-equiv="refresh"`) {
		t.Fatalf("callback: %d %s", res.StatusCode, body)
	}
	if gone := cookieNamed(res, "custody_oidc"); gone == nil || gone.MaxAge >= 0 {
		t.Errorf("the callback kept the sign-in cookie: %+v", gone)
	}
	return session, pre
}

// TestIdPSignInCookie: the sign-in cookie binds the sign-in to the
// browser without holding any of its secrets in the clear: state, nonce
// and verifier are derived from it, and the provider is sent none of it.
func TestIdPSignInCookie(t *testing.T) {
	idp, cidp := startIdP(t)
	e := newEnvWith(t, func(c *web.Config) { c.IdP = cidp })
	b := newBrowserClient(t, e)
	req, _ := http.NewRequest("GET", b.url+"/login/oidc", nil)
	res, _ := b.send(req)
	pre := cookieNamed(res, "custody_oidc")
	if pre == nil || !pre.HttpOnly || pre.SameSite != http.SameSiteLaxMode || pre.Path != "/login/oidc" || pre.MaxAge != 600 {
		t.Fatalf("sign-in cookie %+v: want HttpOnly, SameSite=Lax, Path=/login/oidc, ten minutes", pre)
	}
	loc, _ := url.Parse(res.Header.Get("Location"))
	if !strings.HasPrefix(loc.String(), idp.URL+"/authorize?") || strings.Contains(loc.RawQuery, pre.Value) {
		t.Errorf("sent to %s, which should be the provider's and not hold the cookie's value", loc)
	}
	if res.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control %q", res.Header.Get("Cache-Control"))
	}
	if _, body := b.page("/login"); !strings.Contains(body, `href="/login/oidc"`) || !strings.Contains(body, "Sign in with "+strings.TrimPrefix(idp.Issuer, "http://")) {
		t.Errorf("the sign-in page offers no sign-in at the provider: %s", body)
	}
}

// TestIdPSessionEndsWithItsRole: a session the provider signed in stands
// while the console trusts that provider and its roles claim values still
// give the session's role; a server configured otherwise honours it not.
func TestIdPSessionEndsWithItsRole(t *testing.T) {
	idp, cidp := startIdP(t)
	e := newEnvWith(t, func(c *web.Config) { c.IdP = cidp })
	session, _ := idpSignIn(t, newBrowserClient(t, e), idp)
	other := idptest.Start(t, "")
	for _, tt := range []struct {
		name string
		idp  *web.ConsoleIdP
		want int
	}{
		{"Same", cidp, 200},
		{"OpsNowAuditors", &web.ConsoleIdP{Provider: cidp.Provider, Auditors: []string{"ops"}}, http.StatusUnauthorized},
		{"OpsRemoved", &web.ConsoleIdP{Provider: cidp.Provider, Operators: []string{"sre"}}, http.StatusUnauthorized},
		{"AnotherProvider", &web.ConsoleIdP{Provider: console(t, other.Issuer), Operators: []string{"ops"}}, http.StatusUnauthorized},
		{"NoProvider", nil, http.StatusUnauthorized},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := web.New(web.Config{Gateway: e.gw, Approvals: e.approvals, Ledger: e.ledger, Tokens: web.Tokens{},
				Sessions: e.db, Now: e.clock.Now, IdP: tt.idp})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(s.Handler())
			t.Cleanup(srv.Close)
			if st := newBrowserClientAt(t, e, srv).withSession("GET", "/v1/console", session); st != tt.want {
				t.Errorf("the session: %d, want %d", st, tt.want)
			}
		})
	}
}
