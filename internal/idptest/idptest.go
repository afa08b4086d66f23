// Package idptest runs a real OpenID provider (zitadel's OP library, with
// the in-memory storage of its example server) on 127.0.0.1 for tests:
// clients get JWT or opaque access tokens by client credentials (with an
// RFC 8707 resource, if they like), custody introspects and the clients
// revoke them at the provider's own endpoints, and people sign in to
// custody's console by the authorization code flow at the provider's
// login page (login.go). No token is minted by hand.
package idptest

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// Introspector is the client id and secret custody introspects with.
const (
	IntrospectorID     = "custody"
	IntrospectorSecret = "custody-introspection-secret"
)

// Client is a client-credentials client of the provider.
type Client struct {
	ID, Secret string
	// JWT makes its access tokens JWTs (RFC 9068); else opaque.
	JWT bool
	// Audience is what its tokens' aud names: all of it, or, for a token
	// request naming resources (RFC 8707), those, each of which must be
	// in Audience.
	Audience []string
	// Groups go into its tokens' "groups" claim (and introspection).
	Groups []string
	// Lifetime is how long its access tokens last; 5 minutes when zero
	// (clients.go).
	Lifetime time.Duration
}

// OP is a running provider.
type OP struct {
	// URL is the provider's base URL; Issuer the iss its tokens carry
	// (URL unless Start was given another).
	URL, Issuer string
	st          *store
	// callback is the path the login page sends a signed-in browser to.
	callback string
}

// Start runs a provider until the test ends. issuer is the iss it names
// in its metadata and tokens: its own URL when empty (give another OP's
// URL to sign that issuer's tokens with a key of its own).
func Start(t testing.TB, issuer string) *OP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	if issuer == "" {
		issuer = base
	}
	st := &store{clients: map[string]*Client{}, tokens: map[string]*token{},
		users: &users{m: map[string]*User{}}, consoles: map[string]*consoleClient{}, apps: map[string]*appClient{}}
	st.Storage = storage.NewStorageWithClients(st.users,
		map[string]*storage.Client{IntrospectorID: storage.WebClient(IntrospectorID, IntrospectorSecret)})
	key := sha256.Sum256([]byte(base))
	provider, err := op.NewProvider(&op.Config{CryptoKey: key, CodeMethodS256: true, GrantTypeRefreshToken: true,
		SupportedScopes: []string{oidc.ScopeOpenID, oidc.ScopeProfile, oidc.ScopeEmail, oidc.ScopeOfflineAccess}}, st,
		op.StaticIssuer(issuer), op.WithAllowInsecure())
	if err != nil {
		t.Fatal(err)
	}
	o := &OP{URL: base, Issuer: issuer, st: st, callback: provider.AuthorizationEndpoint().Relative() + "/callback"}
	mux := http.NewServeMux()
	mux.HandleFunc(loginPath, o.handleLogin)
	mux.HandleFunc("POST "+registerPath, o.handleRegister)
	mux.Handle("/", withResource(o.withRegistration(provider)))
	srv := httptest.NewUnstartedServer(mux)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return o
}

// resourceKey is the context key of a token request's RFC 8707
// resource parameters.
type resourceKey struct{}

// withResource hands the resource parameters of a token request to the
// storage, which the OP library does not.
func withResource(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/oauth/token" && r.ParseForm() == nil && len(r.PostForm["resource"]) > 0 {
			r = r.WithContext(context.WithValue(r.Context(), resourceKey{}, r.PostForm["resource"]))
		}
		h.ServeHTTP(w, r)
	})
}

// AddClient registers c.
func (o *OP) AddClient(c Client) {
	o.st.mu.Lock()
	defer o.st.mu.Unlock()
	o.st.clients[c.ID] = &c
}

// Token returns an access token of client id by client credentials, at
// the provider's token endpoint.
func (o *OP) Token(t testing.TB, id string) string {
	t.Helper()
	c := o.client(t, id)
	var resp struct {
		AccessToken string `json:"access_token"`
	}
	o.post(t, "/oauth/token", c.ID, c.Secret, url.Values{"grant_type": {"client_credentials"}, "scope": {"openid"}}, &resp)
	if resp.AccessToken == "" {
		t.Fatalf("the provider issued no access token to %s", id)
	}
	return resp.AccessToken
}

// Revoke revokes token of client id at the provider's revocation
// endpoint (RFC 7009).
func (o *OP) Revoke(t testing.TB, id, tok string) {
	t.Helper()
	c := o.client(t, id)
	o.post(t, "/revoke", c.ID, c.Secret, url.Values{"token": {tok}, "token_type_hint": {"access_token"}}, nil)
}

func (o *OP) client(t testing.TB, id string) *Client {
	o.st.mu.Lock()
	defer o.st.mu.Unlock()
	c := o.st.clients[id]
	if c == nil {
		t.Fatalf("no client %q", id)
	}
	return c
}

func (o *OP) post(t testing.TB, path, id, secret string, form url.Values, into any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, o.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(id, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s", path, resp.Status)
	}
	if into != nil {
		if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
			t.Fatal(err)
		}
	}
}

// store is the example's storage with client-credentials clients of the
// test's making: their tokens' audience and groups, JWT or opaque, and
// access tokens kept here so that introspection and revocation see them;
// and with the test's people and console clients (login.go).
type store struct {
	*storage.Storage
	// keys, once RotateKey has run, sign in place of the storage's own.
	keys     rotation
	mu       sync.Mutex
	clients  map[string]*Client
	tokens   map[string]*token
	users    *users
	consoles map[string]*consoleClient
	// apps are the clients people authorize by the authorization code
	// grant, with refresh tokens (code.go); registration, when set, is
	// what the clients registered by RFC 7591 are like.
	apps         map[string]*appClient
	registration *App
	registered   []string
}

type token struct {
	clientID string
	groups   []string
	subject  string
	exp      time.Time
	scopes   []string
	audience []string
}

// ccClient is a Client as the OP sees it.
type ccClient struct {
	op.Client
	c *Client
}

func (c ccClient) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeClientCredentials}
}

func (c ccClient) AccessTokenType() op.AccessTokenType {
	if c.c.JWT {
		return op.AccessTokenTypeJWT
	}
	return op.AccessTokenTypeBearer
}

func (s *store) lookup(id string) *Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clients[id]
}

func (s *store) ClientCredentials(_ context.Context, id, secret string) (op.Client, error) {
	c := s.lookup(id)
	if c == nil || c.Secret != secret {
		return nil, errors.New("wrong client or secret")
	}
	return ccClient{storage.WebClient(c.ID, c.Secret), c}, nil
}

func (s *store) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	if c := s.lookup(id); c != nil {
		return ccClient{storage.WebClient(c.ID, c.Secret), c}, nil
	}
	if c := s.console(id); c != nil {
		return c, nil
	}
	if a := s.app(id); a != nil {
		return a, nil
	}
	return s.Storage.GetClientByClientID(ctx, id)
}

func (s *store) AuthorizeClientIDSecret(ctx context.Context, id, secret string) error {
	if c := s.lookup(id); c != nil {
		if c.Secret != secret {
			return errors.New("invalid secret")
		}
		return nil
	}
	if c := s.console(id); c != nil {
		if c.secret != secret {
			return errors.New("invalid secret")
		}
		return nil
	}
	if a := s.app(id); a != nil {
		if a.c.Secret == "" || a.c.Secret != secret {
			return errors.New("invalid secret")
		}
		return nil
	}
	return s.Storage.AuthorizeClientIDSecret(ctx, id, secret)
}

func (s *store) ClientCredentialsTokenRequest(ctx context.Context, id string, scopes []string) (op.TokenRequest, error) {
	c := s.lookup(id)
	if c == nil {
		return nil, errors.New("wrong client")
	}
	aud := c.Audience
	if res, _ := ctx.Value(resourceKey{}).([]string); len(res) > 0 {
		for _, r := range res {
			if !slices.Contains(c.Audience, r) {
				return nil, oidc.ErrInvalidTarget().WithDescription("the client may not have tokens for %s", r)
			}
		}
		aud = res
	}
	return &oidc.JWTTokenRequest{Subject: c.ID, Audience: aud, Scopes: scopes}, nil
}

// lifetime is how long an access token lasts.
const lifetime = 5 * time.Minute

func (s *store) CreateAccessToken(ctx context.Context, req op.TokenRequest) (string, time.Time, error) {
	if _, ok := req.(*storage.AuthRequest); ok {
		return s.Storage.CreateAccessToken(ctx, req) // a person's sign-in
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clients[req.GetSubject()]
	if c == nil {
		return "", time.Time{}, errors.New("tokens here are for client-credentials clients and signed-in people")
	}
	id := uuid.NewString()
	exp := time.Now().Add(c.tokenLifetime())
	s.tokens[id] = &token{clientID: c.ID, groups: c.Groups, subject: req.GetSubject(), exp: exp, scopes: req.GetScopes(), audience: req.GetAudience()}
	return id, exp, nil
}

func (s *store) GetPrivateClaimsFromScopes(_ context.Context, userID, _ string, _ []string) (map[string]any, error) {
	if c := s.lookup(userID); c != nil && len(c.Groups) > 0 {
		return map[string]any{"groups": c.Groups}, nil
	}
	return nil, nil
}

func (s *store) SetIntrospectionFromToken(_ context.Context, resp *oidc.IntrospectionResponse, tokenID, _, _ string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	tok := s.tokens[tokenID]
	if tok == nil || tok.exp.Before(time.Now()) {
		return errors.New("token is not active")
	}
	resp.Subject, resp.ClientID, resp.Scope = tok.subject, tok.clientID, tok.scopes
	resp.Expiration, resp.Audience = oidc.FromTime(tok.exp), tok.audience
	if len(tok.groups) > 0 {
		resp.Claims = map[string]any{"groups": tok.groups}
	}
	return nil
}

func (s *store) RevokeToken(_ context.Context, tokenID, _, clientID string) *oidc.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	tok := s.tokens[tokenID]
	if tok != nil && tok.clientID != clientID {
		return oidc.ErrInvalidClient().WithDescription("token was not issued for this client")
	}
	if tok == nil {
		return s.Storage.RevokeToken(context.Background(), tokenID, "", clientID) // a refresh token
	}
	delete(s.tokens, tokenID)
	return nil
}
