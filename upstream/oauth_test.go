package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody/internal/idptest"
	"github.com/custody-dev/custody/internal/testclock"
)

// The client custody is at the test provider, and its secret: no error,
// log line or stored byte may hold either the secret or a token.
const (
	oauthClient = "custody-upstream"
	oauthSecret = "oauth-secret-of-custody-0001"
)

// protectedEcho is the echo server behind the provider's tokens, custody
// a client allowed tokens for it that last lifetime (the provider's
// default when zero).
func protectedEcho(t *testing.T, lifetime time.Duration) (*idptest.OP, *idptest.Protected) {
	t.Helper()
	op := idptest.Start(t, "")
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return echoServer(defaultDescription)() }, nil)
	p := op.Protect(t, h)
	op.AddClient(idptest.Client{ID: oauthClient, Secret: oauthSecret, Audience: []string{p.URL}, Lifetime: lifetime})
	return op, p
}

// oauthServer is the server at p with custody's OAuth at op.
func oauthServer(op *idptest.OP, p *idptest.Protected, secret string) Server {
	return Server{Name: "docs", URL: p.URL, OAuth: &OAuth{Issuer: op.Issuer, ClientID: oauthClient, ClientSecret: secret}}
}

// bearers returns the tokens of Authorization headers, in order.
func bearers(sent []string) []string {
	var out []string
	for _, a := range sent {
		tok, _ := strings.CutPrefix(a, "Bearer ")
		out = append(out, tok)
	}
	return out
}

// echo calls echo on c and fails the test on error.
func echo(t *testing.T, c *Conn, msg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := c.Call(ctx, "echo", []byte(`{"message":"`+msg+`"}`), nil)
	if err != nil || !strings.Contains(string(out), msg) {
		t.Fatalf("echo %s: %s, %v", msg, out, err)
	}
}

// TestOAuthObtainsAndSends: custody obtains a token of its own, bound to
// the server's URL (the resource it asks for: the server refuses any
// other audience), and sends it with every request, beside the headers
// configured.
func TestOAuthObtainsAndSends(t *testing.T) {
	op, p := protectedEcho(t, 0)
	srv := oauthServer(op, p, oauthSecret)
	srv.Headers = map[string]string{"X-Team": "blue"}
	c := dial(t, srv, ConnOptions{})
	echo(t, c, "hello")
	sent := p.Sent()
	if len(sent) == 0 || p.Refused() != 0 {
		t.Fatalf("the server was sent %d requests, refused %d", len(sent), p.Refused())
	}
	admitted := p.Admitted()
	if len(admitted) != 1 {
		t.Fatalf("admitted %d tokens, want one for the whole session", len(admitted))
	}
	for i, tok := range bearers(sent) {
		if tok != admitted[0] {
			t.Fatalf("request %d carried Authorization %q, not custody's token", i, sent[i])
		}
	}
}

// TestOAuthSSE: the legacy HTTP+SSE transport carries the token on its
// event stream and on every message it posts.
func TestOAuthSSE(t *testing.T) {
	op := idptest.Start(t, "")
	h := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return echoServer(defaultDescription)() }, nil)
	p := op.Protect(t, h)
	op.AddClient(idptest.Client{ID: oauthClient, Secret: oauthSecret, Audience: []string{p.URL}})
	srv := oauthServer(op, p, oauthSecret)
	srv.SSE = true
	c := dial(t, srv, ConnOptions{})
	echo(t, c, "legacy")
	if p.Refused() != 0 || len(p.Admitted()) != 1 || len(p.Sent()) < 2 {
		t.Fatalf("sent %d, refused %d, admitted %d tokens", len(p.Sent()), p.Refused(), len(p.Admitted()))
	}
}

// TestOAuthTokenExpires: tokens that last two seconds are replaced, for
// as long as the session is used, and no call fails. The test waits for
// a third token to be seen, not for a time.
func TestOAuthTokenExpires(t *testing.T) {
	op, p := protectedEcho(t, 2*time.Second)
	c := dial(t, oauthServer(op, p, oauthSecret), ConnOptions{})
	for i := 0; len(p.Admitted()) < 3; i++ {
		if i > 3000 {
			t.Fatalf("gave up waiting for the token to be refreshed: %d seen", len(p.Admitted()))
		}
		echo(t, c, "tick")
		time.Sleep(10 * time.Millisecond)
	}
}

// TestOAuthRefusedTokenReplacedOnce: a token the server refuses (revoked
// at the provider) is replaced and the request sent once more; the call
// succeeds and the server saw the refused token once.
func TestOAuthRefusedTokenReplacedOnce(t *testing.T) {
	op, p := protectedEcho(t, 0)
	c := dial(t, oauthServer(op, p, oauthSecret), ConnOptions{})
	echo(t, c, "one")
	first := p.Admitted()[0]
	op.Revoke(t, oauthClient, first)
	echo(t, c, "two")
	admitted := p.Admitted()
	if len(admitted) != 2 || admitted[1] == first || p.Refused() != 1 {
		t.Fatalf("admitted %d tokens, refused %d requests: want a new token after one refusal", len(admitted), p.Refused())
	}
}

// TestOAuthWrongSecret: with a secret the provider refuses, the server is
// down from the start, nothing is sent to it, its calls are unavailable
// and the reason names the client and the fix, never the secret.
func TestOAuthWrongSecret(t *testing.T) {
	op, p := protectedEcho(t, 0)
	const wrong = "not-the-secret-0000000001"
	logs := &logRecorder{}
	c := dial(t, oauthServer(op, p, wrong), ConnOptions{Logger: logs.logger(), MinBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond})
	err := c.Err()
	if err == nil || !errors.Is(err, ErrCredential) {
		t.Fatalf("Err = %v, want a credential error", err)
	}
	for _, want := range []string{`upstream "docs"`, "no OAuth access token", `refused client "custody-upstream"`, "invalid_client", "check oauth.clientId and oauth.clientSecret"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Err %q does not say %q", err, want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := c.Call(ctx, "echo", []byte(`{"message":"x"}`), nil); !errors.Is(err, ErrDown) {
		t.Fatalf("a call: %v, want ErrDown", err)
	}
	if n := len(p.Sent()); n != 0 {
		t.Fatalf("the server was sent %d requests without a token", n)
	}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	for _, l := range logs.records {
		for k, v := range l.attrs {
			if strings.Contains(v, wrong) || strings.Contains(v, oauthSecret) {
				t.Fatalf("log %q %s holds the secret", l.msg, k)
			}
		}
	}
	if _, err := Dial(context.Background(), oauthServer(op, p, wrong), ConnOptions{Required: true}); !errors.Is(err, ErrCredential) {
		t.Fatalf("Dial with Required: %v, want the credential error", err)
	}
}

// TestOAuthFailedRefreshMakesItDown: when the provider stops giving
// custody tokens (its secret was rotated there), the server goes down
// once the token held expires, with the reason, and comes back once the
// secret is right again.
func TestOAuthFailedRefreshMakesItDown(t *testing.T) {
	op, p := protectedEcho(t, 2*time.Second)
	c := dial(t, oauthServer(op, p, oauthSecret), ConnOptions{MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	echo(t, c, "up")
	op.AddClient(idptest.Client{ID: oauthClient, Secret: "rotated-secret-0000000001", Audience: []string{p.URL}, Lifetime: 2 * time.Second})
	waitFor(t, "the server to be down for want of a token", func() bool { return errors.Is(c.Err(), ErrCredential) })
	if msg := c.Err().Error(); !strings.Contains(msg, "invalid_client") || strings.Contains(msg, oauthSecret) {
		t.Fatalf("Err = %q", msg)
	}
	op.AddClient(idptest.Client{ID: oauthClient, Secret: oauthSecret, Audience: []string{p.URL}, Lifetime: 2 * time.Second})
	waitFor(t, "the server to be back", func() bool { return c.Err() == nil })
	echo(t, c, "back")
}

// TestOAuthRefreshBeforeExpiry drives one credential on a clock of the
// test's: a token is reused while fresh, refreshed in the background
// once its refresh time comes (before it expires), and the new token is
// the provider's.
func TestOAuthRefreshBeforeExpiry(t *testing.T) {
	op, p := protectedEcho(t, 0)
	clock := testclock.New(time.Now())
	var failures []error
	cred := newCredential(oauthServer(op, p, oauthSecret), nil, discard(), func(err error) { failures = append(failures, err) })
	cred.now, cred.afterFunc = clock.Now, func(d time.Duration, f func()) stopper { return clock.AfterFunc(d, f) }
	t.Cleanup(cred.close)
	ctx := context.Background()
	first, err := cred.token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	held, _ := cred.held(token.usable)
	if life := held.Expiry.Sub(held.Obtained); life < 4*time.Minute || life > 5*time.Minute {
		t.Fatalf("the token lasts %v, want the provider's 5 minutes", life)
	}
	clock.Add(held.refreshAt().Sub(clock.Now()) - time.Second)
	if again, _ := cred.token(ctx); again != first {
		t.Fatal("a fresh token was replaced")
	}
	clock.Add(time.Second) // the refresh time: the timer refreshes
	now, _ := cred.held(token.fresh)
	if now.Access == "" || now.Access == first || !clock.Now().Before(held.Expiry) || len(failures) > 0 {
		t.Fatalf("at the refresh time, before expiry: a new token %v, failures %v", now.Access != first, failures)
	}
	if got, _ := cred.token(ctx); got != now.Access {
		t.Fatal("the refreshed token is not the one served")
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestOAuthVault: a token obtained is kept sealed in the store and used
// again after a restart, until it is no longer the one to use: under
// another key, or another configuration, a new one is obtained.
func TestOAuthVault(t *testing.T) {
	op, p := protectedEcho(t, 0)
	f := newFixture(t)
	key := bytes.Repeat([]byte{7}, 32)
	vault, err := NewTokenVault(f.db, key)
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, oauthServer(op, p, oauthSecret), ConnOptions{Tokens: vault})
	echo(t, c, "first")
	c.Close()
	first := p.Admitted()[0]
	sealed, err := f.db.UpstreamToken(context.Background(), "docs")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte(first)) || bytes.Contains(sealed, []byte(oauthSecret)) {
		t.Fatal("the store holds the token or the secret in the clear")
	}

	t.Run("ReusedAfterRestart", func(t *testing.T) {
		c := dial(t, oauthServer(op, p, oauthSecret), ConnOptions{Tokens: vault})
		echo(t, c, "again")
		if n := len(p.Admitted()); n != 1 {
			t.Fatalf("%d tokens admitted, want the kept one only", n)
		}
	})
	t.Run("OtherKey", func(t *testing.T) {
		other, _ := NewTokenVault(f.db, bytes.Repeat([]byte{8}, 32))
		logs := &logRecorder{}
		c := dial(t, oauthServer(op, p, oauthSecret), ConnOptions{Tokens: other, Logger: logs.logger()})
		echo(t, c, "other key")
		if n := len(p.Admitted()); n != 2 {
			t.Fatalf("%d tokens admitted, want a new one", n)
		}
		if len(logs.find("the upstream token kept in the store cannot be used; obtaining a new one")) != 1 {
			t.Fatal("the unusable kept token is not logged")
		}
	})
	t.Run("OtherConfiguration", func(t *testing.T) {
		srv := oauthServer(op, p, oauthSecret)
		srv.OAuth.Scopes = []string{"openid"}
		before := len(p.Admitted())
		vault, _ := NewTokenVault(f.db, key)
		c := dial(t, srv, ConnOptions{Tokens: vault})
		echo(t, c, "scoped")
		if n := len(p.Admitted()); n != before+1 {
			t.Fatalf("%d tokens admitted, want a new one for the new scopes", n-before)
		}
	})
}

// TestOAuthStaticHeaderKeepsWorking: a server whose token is a header
// of the configuration (${env:...}) gets exactly that, and nothing of
// OAuth.
func TestOAuthStaticHeaderKeepsWorking(t *testing.T) {
	up := newHTTPUpstream(t, echoServer(defaultDescription))
	c := dial(t, Server{Name: "plain", URL: up.URL(), Headers: map[string]string{"Authorization": "Bearer fixed-1"}}, ConnOptions{})
	echo(t, c, "plain")
	for _, h := range up.Headers() {
		if got := h.Values("Authorization"); len(got) != 1 || got[0] != "Bearer fixed-1" {
			t.Fatalf("Authorization %q, want the configured header alone", got)
		}
	}
}

// fakeTokenEndpoint answers token requests with answer and keeps the
// form and Basic credentials of each: for what the provider cannot show
// (a secret that needs encoding, a malformed reply).
func fakeTokenEndpoint(t *testing.T, answer string, status int) (*httptest.Server, func() (url.Values, string, string)) {
	t.Helper()
	var mu sync.Mutex
	var form url.Values
	var user, pass string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		mu.Lock()
		form = r.PostForm
		user, pass, _ = r.BasicAuth()
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, answer)
	}))
	t.Cleanup(srv.Close)
	return srv, func() (url.Values, string, string) {
		mu.Lock()
		defer mu.Unlock()
		return form, user, pass
	}
}

func TestOAuthTokenRequest(t *testing.T) {
	srv, got := fakeTokenEndpoint(t, `{"access_token":"tok-1","token_type":"bearer","expires_in":"120"}`, 200)
	secret := "a:b+c/d%e"
	cred := newCredential(Server{Name: "docs", URL: "https://mcp.example.com/mcp",
		OAuth: &OAuth{TokenURL: srv.URL, ClientID: "id:1", ClientSecret: secret, Scopes: []string{"mcp:read", "mcp:write"}}}, nil, discard(), nil)
	t.Cleanup(cred.close)
	tok, err := cred.token(context.Background())
	if err != nil || tok != "tok-1" {
		t.Fatalf("token = %q, %v", tok, err)
	}
	form, user, pass := got()
	if form.Get("grant_type") != "client_credentials" || form.Get("resource") != "https://mcp.example.com/mcp" || form.Get("scope") != "mcp:read mcp:write" {
		t.Errorf("form %v", form)
	}
	if u, _ := url.QueryUnescape(user); u != "id:1" {
		t.Errorf("Basic user %q", user)
	}
	if s, _ := url.QueryUnescape(pass); s != secret || form.Has("client_secret") {
		t.Errorf("the secret was not sent form-encoded in Basic alone")
	}
	held, _ := cred.held(token.usable)
	if d := held.Expiry.Sub(held.Obtained); d != 2*time.Minute {
		t.Errorf("expires_in as a string: %v", d)
	}
}

func TestOAuthTokenRefusals(t *testing.T) {
	for _, c := range []struct {
		name, answer string
		status       int
		want         string
	}{
		{"ErrInvalidClient", `{"error":"invalid_client","error_description":"bad secret"}`, 401, `refused client "c": 401 Unauthorized: invalid_client (bad secret): check oauth.clientId and oauth.clientSecret`},
		{"ErrInvalidTarget", `{"error":"invalid_target"}`, 400, "check oauth.resource"},
		{"ErrNotOAuth", `<html>`, 500, "500 Internal Server Error (the reply is no OAuth error response)"},
		{"ErrNoToken", `{"token_type":"bearer"}`, 200, "the reply holds no access_token"},
		{"ErrDPoP", `{"access_token":"tok-secret-1","token_type":"DPoP"}`, 200, `token_type "DPoP": custody sends Bearer tokens only`},
		{"ErrNotJSON", `tok-secret-1`, 200, "the reply is not a JSON token response"},
		{"ErrExpiry", `{"access_token":"tok-secret-1","token_type":"Bearer","expires_in":-5}`, 200, "expires_in -5 is not a number of seconds"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, _ := fakeTokenEndpoint(t, c.answer, c.status)
			cred := newCredential(Server{Name: "docs", URL: "https://m.example.com", OAuth: &OAuth{TokenURL: srv.URL, ClientID: "c", ClientSecret: oauthSecret}}, nil, discard(), nil)
			t.Cleanup(cred.close)
			_, err := cred.token(context.Background())
			if !errors.Is(err, ErrCredential) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("token: %v, want an error saying %q", err, c.want)
			}
			if strings.Contains(err.Error(), "tok-secret-1") || strings.Contains(err.Error(), oauthSecret) {
				t.Fatalf("the error holds a token or the secret: %v", err)
			}
		})
	}
}

// TestOAuthDiscovery: the token endpoint is read from the issuer's
// metadata; metadata that names another issuer, or none at all, is an
// error saying where custody looked.
func TestOAuthDiscovery(t *testing.T) {
	op := idptest.Start(t, "")
	op.AddClient(idptest.Client{ID: "c", Secret: oauthSecret, Audience: []string{"https://m.example.com"}})
	cred := newCredential(Server{Name: "docs", URL: "https://m.example.com", OAuth: &OAuth{Issuer: op.Issuer, ClientID: "c", ClientSecret: oauthSecret}}, nil, discard(), nil)
	t.Cleanup(cred.close)
	if _, err := cred.token(context.Background()); err != nil {
		t.Fatal(err)
	}
	if cred.endpoint != op.URL+"/oauth/token" {
		t.Errorf("token endpoint %q", cred.endpoint)
	}
	// A provider whose metadata names another issuer than asked for.
	other := idptest.Start(t, "http://127.0.0.1:1/elsewhere")
	cred = newCredential(Server{Name: "docs", URL: "https://m.example.com", OAuth: &OAuth{Issuer: other.URL, ClientID: "c", ClientSecret: oauthSecret}}, nil, discard(), nil)
	t.Cleanup(cred.close)
	_, err := cred.token(context.Background())
	if !errors.Is(err, ErrCredential) || !strings.Contains(err.Error(), "discover the token endpoint of "+other.URL) ||
		!strings.Contains(err.Error(), `names the issuer "http://127.0.0.1:1/elsewhere"`) {
		t.Fatalf("token: %v", err)
	}
}

func TestOAuthCheck(t *testing.T) {
	ok := OAuth{Issuer: "https://idp.example.com", ClientID: "c", ClientSecret: "s"}
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		edit func(*OAuth)
		want string
	}{
		{"ErrNoClient", func(o *OAuth) { o.ClientID = "" }, "clientId:"},
		{"ErrNoSecret", func(o *OAuth) { o.ClientSecret = "" }, "clientSecret:"},
		{"ErrNoIssuer", func(o *OAuth) { o.Issuer = "" }, "issuer:"},
		{"ErrClearText", func(o *OAuth) { o.Issuer = "http://idp.example.com" }, "must be https"},
		{"ErrRelative", func(o *OAuth) { o.TokenURL = "/token" }, "tokenUrl:"},
		{"ErrScope", func(o *OAuth) { o.Scopes = []string{"a b"} }, "scopes/0:"},
		{"ErrResource", func(o *OAuth) { o.Resource = "mcp" }, "resource:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := ok
			c.edit(&o)
			if err := o.Check(); err == nil || !strings.HasPrefix(err.Error(), c.want) && !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Check: %v, want %q", err, c.want)
			}
		})
	}
	if _, err := Dial(context.Background(), Server{Name: "x", Command: "true", OAuth: &ok}, ConnOptions{}); err == nil || !strings.Contains(err.Error(), "oauth is for a server at a url") {
		t.Fatalf("Dial of a command with oauth: %v", err)
	}
}

// TestTokenNeverPrinted: a token in a value printed or logged shows as
// a placeholder.
func TestTokenNeverPrinted(t *testing.T) {
	tok := token{Access: "tok-secret-2", Expiry: time.Now()}
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("held", "token", tok)
	for _, s := range []string{fmt.Sprintf("%v %+v %#v %s", tok, tok, tok, tok), logged.String()} {
		if strings.Contains(s, "tok-secret-2") {
			t.Fatalf("printed %q", s)
		}
	}
}

// TestOAuthRefreshFailureBacksOff: a refresh the authorization server
// refuses leaves the token held in use until it expires, without each
// request asking again before the retry time; after expiry the error is
// the server's refusal, and the session's end is asked for.
func TestOAuthRefreshFailureBacksOff(t *testing.T) {
	var mu sync.Mutex
	asked, refuse := 0, false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		asked++
		w.Header().Set("Content-Type", "application/json")
		if refuse {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":"invalid_client"}`)
			return
		}
		io.WriteString(w, `{"access_token":"tok-`+fmt.Sprint(asked)+`","token_type":"Bearer","expires_in":3600}`)
	}))
	t.Cleanup(srv.Close)
	count := func() int { mu.Lock(); defer mu.Unlock(); return asked }
	clock := testclock.New(time.Now())
	var failed []error
	cred := newCredential(Server{Name: "docs", URL: "https://m.example.com", OAuth: &OAuth{TokenURL: srv.URL, ClientID: "c", ClientSecret: "s"}},
		nil, discard(), func(err error) { failed = append(failed, err) })
	cred.now, cred.afterFunc = clock.Now, func(d time.Duration, f func()) stopper { return clock.AfterFunc(d, f) }
	t.Cleanup(cred.close)
	ctx := context.Background()
	if tok, err := cred.token(ctx); err != nil || tok != "tok-1" {
		t.Fatalf("token = %q, %v", tok, err)
	}
	mu.Lock()
	refuse = true
	mu.Unlock()
	clock.Add(time.Hour - time.Minute) // the refresh time: the background refresh is refused
	if n := count(); n != 2 || len(failed) != 0 {
		t.Fatalf("asked %d times, failures %v: want one refused refresh, the token still in use", n, failed)
	}
	for range 5 {
		if tok, err := cred.token(ctx); err != nil || tok != "tok-1" {
			t.Fatalf("before expiry: %q, %v; want the token held", tok, err)
		}
	}
	if n := count(); n != 2 {
		t.Fatalf("asked %d times before the retry time, want no more", n)
	}
	clock.Add(time.Minute) // expired; the retry is refused too
	if len(failed) != 1 || !errors.Is(failed[0], ErrCredential) || !strings.Contains(failed[0].Error(), "invalid_client") {
		t.Fatalf("after expiry: failures %v, want the refusal", failed)
	}
	if _, err := cred.token(ctx); !errors.Is(err, ErrCredential) {
		t.Fatalf("an expired token was served: %v", err)
	}
}
