package upstream

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody/internal/idptest"
)

// The person who authorizes custody at the test provider, and the
// redirect URI of custody's console the provider sends them back to
// (never opened here: the tests read the code off the redirect).
const (
	codeUser     = "u-ana"
	codeUsername = "ana"
	codePassword = "ana-password-0001"
	codeRedirect = "http://127.0.0.1:9/upstreams/oauth/callback"
	codeVerifier = "verifier-of-the-connection-0123456789-abcdefghij"
)

// codeEcho is the echo server behind the provider's tokens, the provider
// registering any client that asks (RFC 7591) with tokens for the server
// that last lifetime (its default when zero), and a person to authorize.
func codeEcho(t *testing.T, lifetime time.Duration) (*idptest.OP, *idptest.Protected) {
	t.Helper()
	op := idptest.Start(t, "")
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return echoServer(defaultDescription)() }, nil)
	p := op.Protect(t, h)
	op.OfferRegistration(idptest.App{Audience: []string{p.URL}, Lifetime: lifetime})
	op.AddUser(idptest.User{ID: codeUser, Username: codeUsername, Password: codePassword, Name: "Ana Operator"})
	return op, p
}

// codeServer is the server at p with the authorization code grant and
// nothing else: the provider is found from the server's metadata.
func codeServerAt(p *idptest.Protected) Server {
	return Server{Name: "notes", URL: p.URL, OAuth: &OAuth{Grant: GrantAuthorizationCode}}
}

// authorize has the person sign in at the provider for a connection of c
// with state, and returns the code the provider sent back.
func authorize(t *testing.T, op *idptest.OP, c *Conn, state string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	to, err := c.AuthorizationURL(ctx, codeRedirect, state, codeVerifier)
	if err != nil {
		t.Fatal(err)
	}
	back := op.Login(t, nil, to, codeUsername, codePassword)
	if got := back.Scheme + "://" + back.Host + back.Path; got != codeRedirect {
		t.Fatalf("the provider sent the browser to %s", back)
	}
	q := back.Query()
	if q.Get("error") != "" || q.Get("state") != state || q.Get("code") == "" {
		t.Fatalf("the provider answered %s", back.RawQuery)
	}
	return q.Get("code")
}

// connect completes c's connection with code and returns what was
// recorded.
func connect(t *testing.T, c *Conn, code string) Connection {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []Connection
	if err := c.Connect(ctx, codeRedirect, code, codeVerifier, func(cn Connection) error {
		got = append(got, cn)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d connections recorded", len(got))
	}
	return got[0]
}

// TestOAuthCodeConnects: a server that takes a person's token is down,
// saying an operator must connect it, until one does; custody finds the
// provider from the server's RFC 9728 metadata, registers itself there
// (RFC 7591), sends the person to the provider with S256 PKCE, redeems
// the code, and the server comes up with the token, bound to the server.
func TestOAuthCodeConnects(t *testing.T) {
	op, p := codeEcho(t, 0)
	c := dial(t, codeServerAt(p), ConnOptions{MaxBackoff: time.Hour})
	if err := c.Err(); !errors.Is(err, ErrNotConnected) || !errors.Is(err, ErrCredential) {
		t.Fatalf("before connecting: %v", err)
	}
	if sent := p.Sent(); len(sent) != 0 {
		t.Fatalf("before anyone connected it the server was sent %q", sent)
	}
	cn := connect(t, c, authorize(t, op, c, "state-1"))
	if reg := op.Registered(); len(reg) != 1 || cn.ClientID != reg[0] || !cn.Registered {
		t.Fatalf("recorded %+v; the provider registered %v", cn, reg)
	}
	if cn.Issuer != op.Issuer || cn.Resource != p.URL || !cn.RefreshToken || !slices.Contains(cn.Scopes, "offline_access") {
		t.Fatalf("recorded %+v", cn)
	}
	// The backoff is an hour: only Connect's nudge brings it up now.
	echo(t, c, "connected")
	if n := len(p.Admitted()); n != 1 || p.Refused() != 1 {
		t.Fatalf("%d tokens admitted, %d requests refused (want the discovery's only)", n, p.Refused())
	}
}

// TestOAuthCodeRefreshes: the refresh token obtains each next access
// token before the one held expires; once the provider ends the
// authorization, the refresh is refused and the server is down, saying
// it must be connected again.
func TestOAuthCodeRefreshes(t *testing.T) {
	op, p := codeEcho(t, 2*time.Second)
	c := dial(t, codeServerAt(p), ConnOptions{MaxBackoff: 200 * time.Millisecond})
	cn := connect(t, c, authorize(t, op, c, "state-2"))
	echo(t, c, "first")
	waitFor(t, "a refreshed token used", func() bool {
		echo(t, c, "again")
		return len(p.Admitted()) >= 2
	})
	op.SignOut(t, codeUser, cn.ClientID)
	waitFor(t, "the server down for want of a connection", func() bool {
		return errors.Is(c.Err(), ErrNotConnected)
	})
	if err := c.Err(); !strings.Contains(err.Error(), "invalid_grant") && !strings.Contains(err.Error(), "not connected") {
		t.Fatalf("down with %v", err)
	}
}

// TestOAuthCodeKeptAcrossRestart: the refresh token and the registered
// client are kept sealed; a restart connects without an operator.
func TestOAuthCodeKeptAcrossRestart(t *testing.T) {
	op, p := codeEcho(t, 0)
	f := newFixture(t)
	vault, err := NewTokenVault(f.db, bytes.Repeat([]byte{9}, 32))
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, codeServerAt(p), ConnOptions{Tokens: vault, MaxBackoff: time.Hour})
	cn := connect(t, c, authorize(t, op, c, "state-3"))
	echo(t, c, "before")
	c.Close()
	sealed, err := f.db.UpstreamToken(context.Background(), "notes")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte(p.Admitted()[0])) || bytes.Contains(sealed, []byte(cn.ClientID)) {
		t.Fatal("the store holds the token or the registered client in the clear")
	}
	again := dial(t, codeServerAt(p), ConnOptions{Tokens: vault})
	echo(t, again, "after")
	if len(op.Registered()) != 1 {
		t.Fatalf("custody registered %d clients, want the kept one only", len(op.Registered()))
	}
}

// TestOAuthCodeRefusals: a wrong PKCE verifier, a record that fails and
// a code used twice each hold nothing; the server stays not connected.
func TestOAuthCodeRefusals(t *testing.T) {
	op, p := codeEcho(t, 0)
	c := dial(t, codeServerAt(p), ConnOptions{MaxBackoff: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	recorded := 0
	record := func(Connection) error { recorded++; return nil }

	code := authorize(t, op, c, "state-4")
	err := c.Connect(ctx, codeRedirect, code, codeVerifier+"x", record)
	if err == nil || !strings.Contains(err.Error(), "invalid_grant") || recorded != 0 {
		t.Fatalf("a wrong verifier: %v (%d recorded)", err, recorded)
	}

	code = authorize(t, op, c, "state-5")
	ledgerDown := errors.New("evidence ledger unavailable")
	if err := c.Connect(ctx, codeRedirect, code, codeVerifier, func(Connection) error { return ledgerDown }); !errors.Is(err, ledgerDown) {
		t.Fatalf("a failed record: %v", err)
	}
	if err := c.Connect(ctx, codeRedirect, code, codeVerifier, record); err == nil || recorded != 0 {
		t.Fatalf("a code used twice: %v (%d recorded)", err, recorded)
	}
	if !errors.Is(c.Err(), ErrNotConnected) || len(p.Admitted()) != 0 {
		t.Fatalf("after the refusals: %v, %d tokens admitted", c.Err(), len(p.Admitted()))
	}
	if reg := op.Registered(); len(reg) != 1 {
		t.Fatalf("custody registered %d clients for one redirect URI", len(reg))
	}
}

// TestOAuthCodeDiscovery: without the server's metadata and without
// oauth.issuer, or at a provider that offers no registration and without
// oauth.clientId, connecting fails and says what to configure.
func TestOAuthCodeDiscovery(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t.Run("ErrNoMetadata", func(t *testing.T) {
		srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return echoServer(defaultDescription)() }, nil))
		t.Cleanup(srv.Close)
		c := dial(t, Server{Name: "plain", URL: srv.URL, OAuth: &OAuth{Grant: GrantAuthorizationCode}}, ConnOptions{MaxBackoff: time.Hour})
		_, err := c.AuthorizationURL(ctx, codeRedirect, "s", codeVerifier)
		if err == nil || !strings.Contains(err.Error(), "RFC 9728") || !strings.Contains(err.Error(), "oauth.issuer") {
			t.Fatalf("AuthorizationURL: %v", err)
		}
	})
	t.Run("ErrNoRegistration", func(t *testing.T) {
		op := idptest.Start(t, "")
		p := op.Protect(t, http.NotFoundHandler())
		c := dial(t, codeServerAt(p), ConnOptions{MaxBackoff: time.Hour})
		_, err := c.AuthorizationURL(ctx, codeRedirect, "s", codeVerifier)
		if err == nil || !strings.Contains(err.Error(), "oauth.clientId") || !strings.Contains(err.Error(), codeRedirect) {
			t.Fatalf("AuthorizationURL: %v", err)
		}
	})
	t.Run("ConfiguredClient", func(t *testing.T) {
		op := idptest.Start(t, "")
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return echoServer(defaultDescription)() }, nil)
		p := op.Protect(t, h)
		op.AddApp(idptest.App{ID: "custody-notes", Secret: "notes-secret-0001", RedirectURIs: []string{codeRedirect}, Audience: []string{p.URL}})
		op.AddUser(idptest.User{ID: codeUser, Username: codeUsername, Password: codePassword})
		srv := codeServerAt(p)
		srv.OAuth.Issuer, srv.OAuth.ClientID, srv.OAuth.ClientSecret = op.Issuer, "custody-notes", "notes-secret-0001"
		c := dial(t, srv, ConnOptions{MaxBackoff: time.Hour})
		cn := connect(t, c, authorize(t, op, c, "state-6"))
		if cn.Registered || cn.ClientID != "custody-notes" {
			t.Fatalf("recorded %+v", cn)
		}
		echo(t, c, "configured")
	})
	t.Run("ErrShortVerifier", func(t *testing.T) {
		_, p := codeEcho(t, 0)
		c := dial(t, codeServerAt(p), ConnOptions{MaxBackoff: time.Hour})
		if _, err := c.AuthorizationURL(ctx, codeRedirect, "s", "short"); err == nil || !strings.Contains(err.Error(), "RFC 7636") {
			t.Fatalf("AuthorizationURL: %v", err)
		}
	})
}

// TestOAuthCodeAuthorizationURL: the request names the registered client,
// the redirect URI, the state, the S256 challenge of the verifier (never
// the verifier) and the server as the resource.
func TestOAuthCodeAuthorizationURL(t *testing.T) {
	op, p := codeEcho(t, 0)
	c := dial(t, codeServerAt(p), ConnOptions{MaxBackoff: time.Hour})
	to, err := c.AuthorizationURL(context.Background(), codeRedirect, "the-state", codeVerifier)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(to)
	q := u.Query()
	want := map[string]string{"response_type": "code", "client_id": op.Registered()[0], "redirect_uri": codeRedirect,
		"state": "the-state", "code_challenge": pkceChallenge(codeVerifier), "code_challenge_method": "S256", "resource": p.URL}
	for k, v := range want {
		if q.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, q.Get(k), v)
		}
	}
	if strings.Contains(to, codeVerifier) {
		t.Error("the authorization URL holds the verifier")
	}
	// RFC 7636 appendix B.
	if got := pkceChallenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"); got != "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM" {
		t.Errorf("the S256 challenge of RFC 7636's example is %s", got)
	}
}

// TestOAuthCodeCheck: the authorization code grant's configuration.
func TestOAuthCodeCheck(t *testing.T) {
	for _, c := range []struct {
		name string
		o    OAuth
		want string
	}{
		{"Bare", OAuth{Grant: GrantAuthorizationCode}, ""},
		{"PublicClient", OAuth{Grant: GrantAuthorizationCode, ClientID: "c"}, ""},
		{"ErrTokenURL", OAuth{Grant: GrantAuthorizationCode, TokenURL: "https://idp.example.com/token"}, "tokenUrl:"},
		{"ErrSecretAlone", OAuth{Grant: GrantAuthorizationCode, ClientSecret: "s"}, "clientSecret:"},
		{"ConfidentialClient", OAuth{Grant: GrantAuthorizationCode, Issuer: "https://idp.example.com", ClientID: "c", ClientSecret: "s"}, ""},
		{"ErrSecretToDiscoveredIssuer", OAuth{Grant: GrantAuthorizationCode, ClientID: "c", ClientSecret: "s"}, "issuer: give the issuer the client is registered at"},
		{"ErrClearText", OAuth{Grant: GrantAuthorizationCode, Issuer: "http://idp.example.com"}, "must be https"},
		{"ErrGrant", OAuth{Grant: "password"}, "grant:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.o.Check()
			if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Check: %v, want %q", err, c.want)
			}
		})
	}
}

// TestResourceCovers: protected resource metadata is the server's own
// only for its URL or one above it on its origin.
func TestResourceCovers(t *testing.T) {
	for _, c := range []struct {
		resource string
		want     bool
	}{
		{"https://mcp.example.com/notes/mcp", true},
		{"https://mcp.example.com/notes/mcp/", true},
		{"https://mcp.example.com", true},
		{"https://mcp.example.com/notes", true},
		{"https://mcp.example.com/note", false},
		{"http://mcp.example.com/notes/mcp", false},
		{"https://evil.example.com/notes/mcp", false},
	} {
		if got := resourceCovers(c.resource, "https://mcp.example.com/notes/mcp"); got != c.want {
			t.Errorf("resourceCovers(%s) = %v", c.resource, got)
		}
	}
}
