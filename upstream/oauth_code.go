package upstream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/custody-dev/custody"
)

// The authorization code grant (RFC 6749 §4.1) with PKCE (RFC 7636), as
// the MCP authorization spec has a client use it, for a server that takes
// only a person's token:
//
//  1. The authorization server is the one the server's protected resource
//     metadata names (RFC 9728: where its 401 says, else its well-known
//     URLs), unless oauth.issuer names it; its endpoints come from its
//     metadata (RFC 8414, else OpenID Connect discovery), which must offer
//     S256 PKCE.
//  2. custody is the client oauth.clientId names, else one it registers
//     there (RFC 7591 dynamic client registration) with the console's
//     callback as its redirect URI, as a public client.
//  3. An operator presses "Connect" in the console: the browser goes to
//     the authorization endpoint (AuthorizationURL) and comes back to the
//     console with a code, which custody redeems with the PKCE verifier
//     (Connect), naming the server as the RFC 8707 resource.
//  4. The refresh token the authorization server issued then obtains each
//     next access token before the one held expires; custody asks for
//     offline_access where the server lists that scope. A refused refresh
//     (invalid_grant) drops the authorization: the server is down, and
//     says an operator must connect it again.
//
// The tokens, and the client registered, are kept sealed as the client
// credentials grant's are (oauth_vault.go).

// ErrNotConnected is wrapped by the error of a server with the
// authorization code grant that no operator has connected, or whose
// authorization the authorization server no longer honours. It wraps
// ErrCredential.
var ErrNotConnected = fmt.Errorf("%w: not connected: an operator connects it in the console", ErrCredential)

// code reports whether o is the authorization code grant.
func (o OAuth) code() bool { return o.Grant == GrantAuthorizationCode }

// checkCode is Check for the authorization code grant.
func (o OAuth) checkCode() error {
	switch {
	case o.TokenURL != "":
		return errors.New("tokenUrl: the authorization code grant reads both its endpoints from the issuer's metadata: give issuer, or leave it out to use the one the server's metadata names")
	case o.ClientSecret != "" && o.ClientID == "":
		return errors.New("clientSecret: give clientId with it, or neither (custody then registers itself, RFC 7591)")
	case o.ClientSecret != "" && o.Issuer == "":
		// The server's metadata names the provider otherwise: a server
		// must not be able to send custody's secret where it likes.
		return errors.New("issuer: give the issuer the client is registered at: custody sends a client secret only to an authorization server the configuration names, never to one a server's metadata names")
	}
	return o.checkCommon()
}

// registration is a client custody registered at an authorization server
// (RFC 7591), for one redirect URI.
type registration struct {
	Issuer      string `json:"issuer"`
	ID          string `json:"client_id"`
	Secret      string `json:"client_secret,omitempty"`
	RedirectURI string `json:"redirect_uri"`
	// Post says the secret goes in the form (client_secret_post).
	Post bool `json:"post,omitempty"`
}

// codeServer is what custody read of the authorization server of a
// server with the authorization code grant.
type codeServer struct {
	issuer string
	meta   authServerMetadata
}

// Connection describes an authorization an operator completed: it goes on
// the ledger, and never holds a token or a secret.
type Connection struct {
	Upstream string   `json:"upstream"`
	Issuer   string   `json:"issuer"`
	ClientID string   `json:"client_id"`
	Scopes   []string `json:"scopes,omitempty"`
	Resource string   `json:"resource"`
	// Registered says custody registered the client itself (RFC 7591).
	Registered bool `json:"registered,omitempty"`
	// RefreshToken says the authorization server issued one: without it
	// the server is down again once the access token expires.
	RefreshToken bool `json:"refresh_token"`
}

// pkceChallenge is the S256 code challenge of verifier (RFC 7636 §4.2).
func pkceChallenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// authorizationURL returns the authorization endpoint with the request
// of one connection: the browser that opens it signs in there and comes
// back to redirectURI with state and a code. verifier is the connection's
// PKCE verifier (43 to 128 characters of RFC 7636's alphabet).
func (c *credential) authorizationURL(ctx context.Context, redirectURI, state, verifier string) (string, error) {
	if !c.cfg.code() {
		return "", fmt.Errorf("upstream %q takes its tokens by the %s grant: there is nothing to connect", c.server, c.grant())
	}
	if len(verifier) < 43 || len(verifier) > 128 {
		return "", errors.New("the PKCE verifier must be 43 to 128 characters (RFC 7636)")
	}
	if err := c.acquire(ctx); err != nil {
		return "", err
	}
	defer func() { <-c.sem }()
	as, err := c.codeEndpoints(ctx)
	if err != nil {
		return "", err
	}
	client, err := c.codeClient(ctx, as, redirectURI)
	if err != nil {
		return "", err
	}
	q := url.Values{"response_type": {"code"}, "client_id": {client.ID}, "redirect_uri": {redirectURI}, "state": {state},
		"code_challenge": {pkceChallenge(verifier)}, "code_challenge_method": {"S256"}, "resource": {c.cfg.Resource}}
	if s := c.codeScopes(as); len(s) > 0 {
		q.Set("scope", strings.Join(s, " "))
	}
	u, _ := url.Parse(as.meta.AuthorizationEndpoint)
	if u.RawQuery != "" {
		u.RawQuery += "&"
	}
	u.RawQuery += q.Encode()
	return u.String(), nil
}

// connect redeems code, which the authorization server sent the browser
// back to redirectURI with, by the connection's PKCE verifier; record is
// told of the connection and must succeed before the token is held or
// kept (the ledger first: no authorization is used that is not on it).
func (c *credential) connect(ctx context.Context, redirectURI, code, verifier string, record func(Connection) error) error {
	if !c.cfg.code() {
		return fmt.Errorf("upstream %q takes its tokens by the %s grant: there is nothing to connect", c.server, c.grant())
	}
	if err := c.acquire(ctx); err != nil {
		return err
	}
	defer func() { <-c.sem }()
	as, err := c.codeEndpoints(ctx)
	if err != nil {
		return err
	}
	client := c.configuredClient(as)
	if client.ID == "" {
		c.mu.Lock()
		reg := c.reg
		c.mu.Unlock()
		if reg == nil || reg.Issuer != as.issuer || reg.RedirectURI != redirectURI {
			return fmt.Errorf("%w: custody holds no client registration for this connection (it restarted since it began?): connect again", ErrCredential)
		}
		client = *reg
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI},
		"code_verifier": {verifier}, "resource": {c.cfg.Resource}}
	t, err := c.tokenRequest(ctx, as.meta.TokenEndpoint, form, clientAuth{id: client.ID, secret: client.Secret, post: client.Post})
	if err != nil {
		return err
	}
	if c.cfg.ClientID == "" {
		t.Client = &client
	}
	conn := Connection{Upstream: c.server, Issuer: as.issuer, ClientID: client.ID, Scopes: c.codeScopes(as),
		Resource: c.cfg.Resource, Registered: t.Client != nil, RefreshToken: t.Refresh != ""}
	if err := record(conn); err != nil {
		return err
	}
	c.mu.Lock()
	c.loaded = true // what the vault holds is replaced below
	c.mu.Unlock()
	c.keep(ctx, t)
	c.log.Info("upstream connected by an operator", "issuer", as.issuer, "client_id", client.ID, "refresh_token", t.Refresh != "")
	return nil
}

// acquire takes sem, or fails as ctx ends.
func (c *credential) acquire(ctx context.Context) error {
	select {
	case c.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %v", ErrCredential, ctx.Err())
	}
}

// grant names c's grant.
func (c *credential) grant() string {
	if c.cfg.code() {
		return GrantAuthorizationCode
	}
	return GrantClientCredentials
}

// refreshByToken obtains the next access token by the refresh token held;
// without one the server is not connected. A refusal of the refresh token
// itself drops it: the authorization is over until an operator connects
// the server again. Called with sem held.
func (c *credential) refreshByToken(ctx context.Context) (token, error) {
	c.mu.Lock()
	held := c.tok
	c.mu.Unlock()
	if held.Refresh == "" {
		if held.Access != "" {
			return token{}, fmt.Errorf("%w (its access token expired, and the authorization server issued no refresh token)", ErrNotConnected)
		}
		return token{}, ErrNotConnected
	}
	as, err := c.codeEndpoints(ctx)
	if err != nil {
		return token{}, fmt.Errorf("%w: %w", ErrCredential, err)
	}
	client := c.configuredClient(as)
	if held.Client != nil {
		client = *held.Client
	}
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {held.Refresh}, "resource": {c.cfg.Resource}}
	t, err := c.tokenRequest(ctx, as.meta.TokenEndpoint, form, clientAuth{id: client.ID, secret: client.Secret, post: client.Post})
	if err != nil {
		if refusedWith(err, "invalid_grant") {
			c.mu.Lock()
			if c.tok.Refresh == held.Refresh {
				c.tok = token{}
			}
			c.mu.Unlock()
			return token{}, fmt.Errorf("%w: %w", ErrNotConnected, err)
		}
		return token{}, err
	}
	if t.Refresh == "" {
		t.Refresh = held.Refresh // RFC 6749 §6: the old one stays valid
	}
	t.Client = held.Client
	return t, nil
}

// configuredClient is the client the configuration names; its ID is ""
// when it names none (custody registers one). Its secret goes by
// client_secret_post only where the metadata offers no Basic.
func (c *credential) configuredClient(as codeServer) registration {
	m := as.meta.AuthMethods
	post := c.cfg.ClientSecret != "" && len(m) > 0 && !slices.Contains(m, "client_secret_basic") && slices.Contains(m, "client_secret_post")
	return registration{Issuer: as.issuer, ID: c.cfg.ClientID, Secret: c.cfg.ClientSecret, Post: post}
}

// codeScopes are the scopes asked for: the configured ones, and
// offline_access where the authorization server lists it, so that it
// issues a refresh token.
func (c *credential) codeScopes(as codeServer) []string {
	s := slices.Clone(c.cfg.Scopes)
	if slices.Contains(as.meta.ScopesSupported, "offline_access") && !slices.Contains(s, "offline_access") {
		s = append(s, "offline_access")
	}
	return s
}

// codeClient returns the client of a connection to redirectURI: the
// configured one, else the one registered for it, else one registered now
// (RFC 7591). Called with sem held.
func (c *credential) codeClient(ctx context.Context, as codeServer, redirectURI string) (registration, error) {
	if cl := c.configuredClient(as); cl.ID != "" {
		return cl, nil
	}
	c.mu.Lock()
	for _, r := range []*registration{c.reg, c.tok.Client} {
		if r != nil && r.Issuer == as.issuer && r.RedirectURI == redirectURI {
			c.reg = r
			c.mu.Unlock()
			return *r, nil
		}
	}
	c.mu.Unlock()
	reg, err := c.register(ctx, as, redirectURI)
	if err != nil {
		return registration{}, err
	}
	c.mu.Lock()
	c.reg = &reg
	c.mu.Unlock()
	return reg, nil
}

// register registers custody as a public client of the authorization
// server, redirected to redirectURI (RFC 7591).
func (c *credential) register(ctx context.Context, as codeServer, redirectURI string) (registration, error) {
	endpoint := as.meta.RegistrationEndpoint
	if endpoint == "" {
		return registration{}, fmt.Errorf("the authorization server %s offers no dynamic client registration (RFC 7591): register custody there as a client with the redirect URI %s and give oauth.clientId", as.issuer, redirectURI)
	}
	if err := checkSecretURL(endpoint); err != nil {
		return registration{}, fmt.Errorf("the metadata of %s names the registration_endpoint %w", as.issuer, err)
	}
	doc := map[string]any{"client_name": "custody", "redirect_uris": []string{redirectURI}, "token_endpoint_auth_method": "none",
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"}}
	if s := c.codeScopes(as); len(s) > 0 {
		doc["scope"] = strings.Join(s, " ")
	}
	body, _ := json.Marshal(doc)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return registration{}, fmt.Errorf("register at %s: %v", endpoint, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return registration{}, fmt.Errorf("register at %s: %v", endpoint, transportCause(err))
	}
	defer resp.Body.Close()
	reply, err := io.ReadAll(io.LimitReader(resp.Body, maxAuthReply+1))
	switch {
	case err != nil || len(reply) > maxAuthReply:
		return registration{}, fmt.Errorf("register at %s: the reply cannot be read whole", endpoint)
	case resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK:
		return registration{}, fmt.Errorf("register at %s: %w", endpoint, refusal(resp.Status, reply, "authorization_code"))
	}
	var r struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		AuthMethod   string `json:"token_endpoint_auth_method"`
	}
	if json.Unmarshal(reply, &r) != nil || r.ClientID == "" {
		return registration{}, fmt.Errorf("register at %s: the reply is no client information response (RFC 7591 §3.2.1)", endpoint)
	}
	c.log.Info("custody registered itself at the authorization server", "issuer", as.issuer, "client_id", r.ClientID)
	return registration{Issuer: as.issuer, ID: r.ClientID, Secret: r.ClientSecret, RedirectURI: redirectURI,
		Post: r.ClientSecret != "" && r.AuthMethod == "client_secret_post"}, nil
}

// codeEndpoints returns the authorization server, read once. Called with
// sem held.
func (c *credential) codeEndpoints(ctx context.Context) (codeServer, error) {
	if c.codeAS != nil {
		return *c.codeAS, nil
	}
	issuer := c.cfg.Issuer
	if issuer == "" {
		var err error
		if issuer, err = resourceIssuer(ctx, c.hc, c.serverURL); err != nil {
			return codeServer{}, err
		}
	}
	m, err := discover(ctx, c.hc, issuer)
	if err != nil {
		return codeServer{}, err
	}
	for _, u := range []struct{ name, url string }{{"token_endpoint", m.TokenEndpoint}, {"authorization_endpoint", m.AuthorizationEndpoint}} {
		if u.url == "" {
			return codeServer{}, fmt.Errorf("the metadata of %s names no %s", issuer, u.name)
		}
		if err := checkSecretURL(u.url); err != nil {
			return codeServer{}, fmt.Errorf("the metadata of %s names the %s %w", issuer, u.name, err)
		}
	}
	if !slices.Contains(m.CodeChallengeMethods, "S256") {
		return codeServer{}, fmt.Errorf("the authorization server %s does not offer S256 PKCE (code_challenge_methods_supported %v): custody will not use the authorization code grant without it", issuer, m.CodeChallengeMethods)
	}
	c.codeAS = &codeServer{issuer: issuer, meta: m}
	return *c.codeAS, nil
}

// resourceMetadataParam is the resource_metadata of a WWW-Authenticate
// challenge (RFC 9728 §5.1).
var resourceMetadataParam = regexp.MustCompile(`(?i)\bresource_metadata\s*=\s*"([^"]+)"`)

// resourceIssuer returns the authorization server that the protected
// resource metadata of the server at serverURL names: at the URL its 401
// names, else at the well-known URLs (path-suffixed, then at the root).
// The metadata must be the server's own (its resource a prefix of the
// server's URL).
func resourceIssuer(ctx context.Context, hc *http.Client, serverURL string) (string, error) {
	var candidates []string
	if req, err := http.NewRequestWithContext(ctx, http.MethodGet, serverURL, nil); err == nil {
		req.Header.Set("Accept", "application/json, text/event-stream")
		if resp, err := hc.Do(req); err == nil {
			drain(resp)
			if m := resourceMetadataParam.FindStringSubmatch(resp.Header.Get("WWW-Authenticate")); m != nil {
				candidates = append(candidates, m[1])
			}
		}
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", fmt.Errorf("the server's url %q: %v", serverURL, err)
	}
	path := strings.TrimSuffix(u.Path, "/")
	for _, p := range []string{path, ""} {
		w := *u
		w.Path, w.RawPath, w.RawQuery, w.Fragment = "/.well-known/oauth-protected-resource"+p, "", "", ""
		if !slices.Contains(candidates, w.String()) {
			candidates = append(candidates, w.String())
		}
	}
	var errs []error
	for _, at := range candidates {
		var m struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
		}
		err := getJSON(ctx, hc, at, &m)
		switch {
		case err != nil:
		case !resourceCovers(m.Resource, serverURL):
			err = fmt.Errorf("%s is the metadata of %q, not of %s", at, m.Resource, serverURL)
		case len(m.AuthorizationServers) == 0:
			err = fmt.Errorf("%s names no authorization_servers", at)
		default:
			return m.AuthorizationServers[0], nil
		}
		errs = append(errs, err)
	}
	return "", fmt.Errorf("find the server's authorization server in its protected resource metadata (RFC 9728), or give oauth.issuer: %w", errors.Join(errs...))
}

// resourceCovers reports whether resource, a protected resource's
// identifier, is serverURL or a URL above it on the same origin.
func resourceCovers(resource, serverURL string) bool {
	r, err1 := url.Parse(resource)
	s, err2 := url.Parse(serverURL)
	if err1 != nil || err2 != nil || r.Scheme != s.Scheme || !strings.EqualFold(r.Host, s.Host) {
		return false
	}
	rp, sp := strings.TrimSuffix(r.Path, "/"), strings.TrimSuffix(s.Path, "/")
	return rp == sp || strings.HasPrefix(sp, rp+"/")
}

// AuthorizationURL returns where an operator's browser goes to connect
// the server named name, which takes its tokens by the authorization
// code grant: the authorization server's page, which sends the browser
// back to redirectURI with state and a code for Connect. verifier is the
// connection's PKCE verifier, which Connect must be given too.
func (s *Set) AuthorizationURL(ctx context.Context, name, redirectURI, state, verifier string) (string, error) {
	c, err := s.codeConn(name)
	if err != nil {
		return "", err
	}
	return c.AuthorizationURL(ctx, redirectURI, state, verifier)
}

// Connect completes the connection of the server named name (see
// Conn.Connect).
func (s *Set) Connect(ctx context.Context, name, redirectURI, code, verifier string, record func(Connection) error) error {
	c, err := s.codeConn(name)
	if err != nil {
		return err
	}
	return c.Connect(ctx, redirectURI, code, verifier, record)
}

// codeConn returns the server named name when it takes its tokens by the
// authorization code grant; else a custody ENOTFOUND error saying so.
func (s *Set) codeConn(name string) (*Conn, error) {
	c := s.conn(name)
	if c == nil || c.cred == nil || !c.cred.cfg.code() {
		return nil, custody.Errorf(custody.ENOTFOUND, "no upstream %q connects by the authorization code grant", name)
	}
	return c, nil
}

// AuthorizationURL is Set.AuthorizationURL for c's server.
func (c *Conn) AuthorizationURL(ctx context.Context, redirectURI, state, verifier string) (string, error) {
	if c.cred == nil {
		return "", fmt.Errorf("upstream %q has no oauth: there is nothing to connect", c.srv.Name)
	}
	u, err := c.cred.authorizationURL(ctx, redirectURI, state, verifier)
	if err != nil {
		return "", fmt.Errorf("upstream %q: %w", c.srv.Name, err)
	}
	return u, nil
}

// Connect redeems code, which the authorization server sent the browser
// back to redirectURI with, by the connection's verifier; has record put
// the connection on the ledger; and only then holds and keeps the token
// and brings the session up at once. Nothing is held when record fails.
func (c *Conn) Connect(ctx context.Context, redirectURI, code, verifier string, record func(Connection) error) error {
	if c.cred == nil {
		return fmt.Errorf("upstream %q has no oauth: there is nothing to connect", c.srv.Name)
	}
	if err := c.cred.connect(ctx, redirectURI, code, verifier, record); err != nil {
		return fmt.Errorf("upstream %q: %w", c.srv.Name, err)
	}
	select {
	case c.nudge <- struct{}{}:
	default:
	}
	return nil
}
