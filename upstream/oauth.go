package upstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A server at a URL that requires OAuth gets custody's own access token,
// never the agent's: custody is an OAuth client of the server's
// authorization server, by the client credentials grant (RFC 6749 §4.4),
// or by the authorization code grant with PKCE that an operator completes
// once in the console (oauth_code.go), after which refresh tokens keep
// it; and sends the token it obtained as Authorization: Bearer on every
// request to the server (oauth_transport.go). The token is refreshed
// before it expires, and once more when the server answers 401; while
// none can be had the server is down, and why is what /healthz says.
// Tokens may be kept, sealed, in the store (oauth_vault.go), so that a
// restart reuses one that has not expired.

// The grants custody obtains an upstream's tokens by.
const (
	// GrantClientCredentials is the client credentials grant: custody's
	// own identity, for machine-to-machine servers. The default.
	GrantClientCredentials = "client_credentials"
	// GrantAuthorizationCode is the authorization code grant with PKCE:
	// a person's authorization, given once by an operator in the console
	// and kept by refresh tokens (oauth_code.go).
	GrantAuthorizationCode = "authorization_code"
)

// OAuth is how custody obtains an access token for one server.
type OAuth struct {
	// Grant is GrantClientCredentials (when empty) or
	// GrantAuthorizationCode.
	Grant string
	// Issuer is the authorization server's issuer identifier: its token
	// endpoint is read from its metadata (RFC 8414, else OpenID Connect
	// discovery) unless TokenURL names it. With the authorization code
	// grant it may be left out: the server's protected resource metadata
	// (RFC 9728) names it.
	Issuer   string
	TokenURL string
	// ClientID and ClientSecret are custody's credentials as a client of
	// the authorization server (client_secret_basic, or client_secret_post
	// where its metadata offers only that). With the authorization code
	// grant both may be left out, where the authorization server offers
	// dynamic client registration (RFC 7591), and the secret alone may
	// (a public client, PKCE its proof).
	ClientID, ClientSecret string
	// Scopes are asked for with each token; none: the server's default.
	Scopes []string
	// Resource is the RFC 8707 resource indicator of each token request:
	// the server's URL when empty, so that the token is bound to it.
	Resource string
}

// ErrCredential is wrapped by the error of a server whose access token
// cannot be had: nothing was sent to the server without one.
var ErrCredential = errors.New("no OAuth access token")

// Check reports what is wrong with o, beginning with the member's JSON
// name ("issuer: ..."). The client secret is never part of the error.
func (o OAuth) Check() error {
	switch o.Grant {
	case "", GrantClientCredentials:
	case GrantAuthorizationCode:
		return o.checkCode()
	default:
		return fmt.Errorf("grant: %q is neither %q nor %q", o.Grant, GrantClientCredentials, GrantAuthorizationCode)
	}
	switch {
	case o.ClientID == "":
		return errors.New("clientId: give the client id custody has at the authorization server")
	case o.ClientSecret == "":
		return errors.New(`clientSecret: give the client's secret, as "${env:NAME}"`)
	case o.Issuer == "" && o.TokenURL == "":
		return errors.New("issuer: give the authorization server's issuer (its token endpoint is read from its metadata), or tokenUrl")
	}
	return o.checkCommon()
}

// checkCommon checks what both grants share: the URLs, the resource and
// the scopes.
func (o OAuth) checkCommon() error {
	for _, u := range []struct{ name, url string }{{"issuer", o.Issuer}, {"tokenUrl", o.TokenURL}} {
		if u.url == "" {
			continue
		}
		if err := checkSecretURL(u.url); err != nil {
			return fmt.Errorf("%s: %w", u.name, err)
		}
	}
	if o.Resource != "" {
		if u, err := url.Parse(o.Resource); err != nil || !u.IsAbs() || u.Fragment != "" {
			return fmt.Errorf("resource: %q is not an absolute URI without a fragment (RFC 8707)", o.Resource)
		}
	}
	for i, s := range o.Scopes {
		if !isScopeToken(s) {
			return fmt.Errorf("scopes/%d: %q is not one scope (printable ASCII, no space, quote or backslash)", i, s)
		}
	}
	return nil
}

// checkSecretURL refuses a URL custody would send its client secret to in
// the clear: https, or http to a loopback address only.
func checkSecretURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("%q is not an absolute http(s) URL", raw)
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		return fmt.Errorf("%q: custody sends its client secret there, so it must be https (http only for a loopback address)", raw)
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// isScopeToken reports whether s is one scope-token (RFC 6749 §3.3).
func isScopeToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < 0x21 || r > 0x7e || r == '"' || r == '\\' {
			return false
		}
	}
	return true
}

// withDefaults returns o with its resource the server's URL when unset.
func (o OAuth) withDefaults(serverURL string) OAuth {
	if o.Resource == "" {
		o.Resource = serverURL
	}
	return o
}

// fingerprint names what a token was obtained for: a kept token is used
// again only for the same authorization server, client, scopes and
// resource. The secret is not part of it.
func (o OAuth) fingerprint() string {
	b, _ := json.Marshal([]any{o.Issuer, o.TokenURL, o.ClientID, o.Scopes, o.Resource})
	if o.code() {
		b, _ = json.Marshal([]any{o.Grant, o.Issuer, o.ClientID, o.Scopes, o.Resource})
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Timing of the tokens: a token is refreshed refreshMargin before it
// expires (a quarter of its lifetime, for a short one), a failed
// background refresh of a token still valid is tried again after at most
// retryRefresh, and one request to the authorization server may take
// authTimeout.
const (
	refreshMargin = time.Minute
	retryRefresh  = 30 * time.Second
	authTimeout   = 30 * time.Second
	// maxAuthReply caps what custody reads of the authorization server.
	maxAuthReply = 1 << 20
)

// token is an access token custody obtained, with the refresh token and
// the registered client of the authorization code grant. Its String,
// GoString and LogValue never show it.
type token struct {
	Access string `json:"access_token"`
	// Refresh obtains the next access token, with the authorization code
	// grant; "" when the server issued none.
	Refresh string `json:"refresh_token,omitempty"`
	// Client is the client custody registered at the authorization server
	// (RFC 7591), which the refresh token belongs to; nil for a client
	// of the configuration.
	Client *registration `json:"client,omitempty"`
	// Expiry is when it expires; zero when the server did not say.
	Expiry time.Time `json:"expiry,omitzero"`
	// Obtained is when it was asked for.
	Obtained time.Time `json:"obtained"`
}

func (t token) String() string       { return "[access token]" }
func (t token) GoString() string     { return "[access token]" }
func (t token) LogValue() slog.Value { return slog.StringValue("[access token]") }
func (t token) usable(now time.Time) bool {
	return t.Access != "" && (t.Expiry.IsZero() || now.Before(t.Expiry))
}

// fresh reports whether t is usable and not due for a refresh.
func (t token) fresh(now time.Time) bool {
	return t.usable(now) && (t.Expiry.IsZero() || now.Before(t.refreshAt()))
}

// refreshAt is when t is refreshed; zero when it has no expiry.
func (t token) refreshAt() time.Time {
	if t.Expiry.IsZero() {
		return time.Time{}
	}
	return t.Expiry.Add(-min(refreshMargin, t.Expiry.Sub(t.Obtained)/4))
}

// credential holds one server's access token: obtained when first
// needed, refreshed before it expires (in the background too, so that an
// idle server's token is fresh and a failure is seen), dropped when the
// server refuses it. Safe for concurrent use.
type credential struct {
	server string
	cfg    OAuth // Resource set
	hc     *http.Client
	vault  *TokenVault // nil: tokens kept in memory only
	now    func() time.Time
	// afterFunc is time.AfterFunc, on the clock of now.
	afterFunc func(time.Duration, func()) stopper
	log       *slog.Logger
	// failed is told when no token can be had for a session that may be
	// up: it ends the session (Conn.credentialFailed).
	failed func(error)

	// sem is held while a token is read from the vault or fetched, so
	// that one fetch serves every request waiting; endpoint and post are
	// read and written under it.
	sem      chan struct{}
	endpoint string
	post     bool // client_secret_post rather than client_secret_basic
	// serverURL is the server's URL; codeAS its authorization server
	// once read, with the authorization code grant (oauth_code.go).
	serverURL string
	codeAS    *codeServer

	mu     sync.Mutex
	tok    token
	loaded bool // the vault was read
	// reg is the client registered for the connection under way.
	reg *registration
	// retryAt is when a refresh that failed is tried again.
	retryAt time.Time
	timer   stopper
	closed  bool
}

// stopper is a timer of afterFunc.
type stopper interface{ Stop() bool }

func realAfterFunc(d time.Duration, f func()) stopper { return time.AfterFunc(d, f) }

// newCredential returns the credential of srv, whose OAuth is set and
// checked.
func newCredential(srv Server, vault *TokenVault, log *slog.Logger, failed func(error)) *credential {
	return &credential{server: srv.Name, serverURL: srv.URL, cfg: srv.OAuth.withDefaults(srv.URL), hc: &http.Client{Timeout: authTimeout},
		vault: vault, now: time.Now, afterFunc: realAfterFunc, log: log, failed: failed, sem: make(chan struct{}, 1)}
}

// token returns a usable access token: the one held while it is fresh,
// else a new one. A refresh that fails while the token held has not
// expired returns that token (and says so in the log); otherwise the
// error wraps ErrCredential.
func (c *credential) token(ctx context.Context) (string, error) {
	if t, ok := c.held(token.fresh); ok {
		return t.Access, nil
	}
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		// Nothing was sent: not the caller's deadline passing mid-call.
		return "", fmt.Errorf("%w: %v", ErrCredential, ctx.Err())
	}
	defer func() { <-c.sem }()
	if t, ok := c.held(token.fresh); ok {
		return t.Access, nil // fetched while this call waited
	}
	if t, ok := c.load(ctx); ok {
		return t.Access, nil
	}
	if t, ok := c.held(c.waiting); ok {
		return t.Access, nil
	}
	t, err := c.fetch(ctx)
	if err != nil {
		if old, ok := c.held(token.usable); ok {
			retry := c.now().Add(min(retryRefresh, max(old.Expiry.Sub(c.now())/2, time.Second)))
			c.log.Warn("upstream token refresh failed; the current token serves until it expires", "err", err, "expires", old.Expiry, "retry_at", retry)
			c.mu.Lock()
			c.retryAt = retry
			c.mu.Unlock()
			c.schedule(retry)
			return old.Access, nil
		}
		return "", err
	}
	c.keep(ctx, t)
	return t.Access, nil
}

// waiting reports whether t, due for a refresh that failed, is to be
// used until the refresh is tried again: requests do not each ask the
// authorization server meanwhile. Called with mu held.
func (c *credential) waiting(t token, now time.Time) bool {
	return t.usable(now) && now.Before(c.retryAt)
}

// held returns the token held when ok says it will do.
func (c *credential) held(ok func(token, time.Time) bool) (token, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tok, ok(c.tok, c.now())
}

// load reads the token kept in the vault, once, and holds it when it has
// not expired; it returns it when it is fresh. Called with sem held.
func (c *credential) load(ctx context.Context) (token, bool) {
	c.mu.Lock()
	done := c.loaded
	c.loaded = true
	c.mu.Unlock()
	if done || c.vault == nil {
		return token{}, false
	}
	t, err := c.vault.load(ctx, c.server, c.cfg.fingerprint())
	if errors.Is(err, errNoToken) {
		return token{}, false
	}
	if err != nil {
		c.log.Warn("the upstream token kept in the store cannot be used; obtaining a new one", "err", err)
		return token{}, false
	}
	if !t.usable(c.now()) && t.Refresh == "" {
		return token{}, false
	}
	c.mu.Lock()
	c.tok = t
	c.mu.Unlock()
	c.log.Info("upstream token reused from the store", "expires", t.Expiry)
	c.schedule(t.refreshAt())
	return t, t.fresh(c.now())
}

// keep holds t, keeps it in the vault and schedules its refresh. The
// vault is written even when the request that asked for t gives up.
func (c *credential) keep(ctx context.Context, t token) {
	c.mu.Lock()
	c.tok, c.retryAt = t, time.Time{}
	c.mu.Unlock()
	if c.vault != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), authTimeout)
		defer cancel()
		if err := c.vault.save(ctx, c.server, c.cfg.fingerprint(), t); err != nil {
			c.log.Warn("upstream token obtained but not kept in the store: a restart obtains another", "err", err)
		}
	}
	c.schedule(t.refreshAt())
}

// rejected drops access, which the server refused, unless it was
// replaced already: the next request obtains a new token.
func (c *credential) rejected(access string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tok.Access == access {
		c.tok = token{}
	}
}

// schedule has the token refreshed in the background at at (never when
// at is zero: a token without expiry is refreshed when refused).
func (c *credential) schedule(at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || at.IsZero() {
		return
	}
	if c.timer != nil {
		c.timer.Stop()
	}
	c.timer = c.afterFunc(max(at.Sub(c.now()), 0), c.refresh)
}

// refresh is the background refresh: a token that cannot be had makes the
// server down until one can (the supervisor tries again as it restarts
// the session).
func (c *credential) refresh() {
	ctx, cancel := context.WithTimeout(context.Background(), authTimeout)
	defer cancel()
	if _, err := c.token(ctx); err != nil {
		c.log.Warn("upstream token refresh failed: the server is unavailable until a token is had", "err", err)
		c.failed(err)
	}
}

// close stops the background refresh. nil-safe.
func (c *credential) close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.timer != nil {
		c.timer.Stop()
	}
}

// fetch obtains a new token at the token endpoint: by client
// credentials, or by the refresh token of the authorization code grant.
// Called with sem held.
func (c *credential) fetch(ctx context.Context) (token, error) {
	if c.cfg.code() {
		return c.refreshByToken(ctx)
	}
	endpoint, err := c.tokenEndpoint(ctx)
	if err != nil {
		return token{}, fmt.Errorf("%w: %w", ErrCredential, err)
	}
	form := url.Values{"grant_type": {"client_credentials"}, "resource": {c.cfg.Resource}}
	if len(c.cfg.Scopes) > 0 {
		form.Set("scope", strings.Join(c.cfg.Scopes, " "))
	}
	return c.tokenRequest(ctx, endpoint, form, clientAuth{id: c.cfg.ClientID, secret: c.cfg.ClientSecret, post: c.post})
}

// clientAuth is how custody authenticates at the token endpoint: by
// client_secret_basic, client_secret_post, or, with no secret, as a
// public client naming itself in the form (PKCE or the refresh token
// its proof).
type clientAuth struct {
	id, secret string
	post       bool
}

// tokenRequest posts form, with the client's authentication, to the
// token endpoint and reads the token it answers. Its errors wrap
// ErrCredential and never hold a secret or a token.
func (c *credential) tokenRequest(ctx context.Context, endpoint string, form url.Values, auth clientAuth) (token, error) {
	if auth.post || auth.secret == "" {
		form.Set("client_id", auth.id)
	}
	if auth.post && auth.secret != "" {
		form.Set("client_secret", auth.secret)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return token{}, fmt.Errorf("%w: token endpoint %s: %v", ErrCredential, endpoint, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if !auth.post && auth.secret != "" {
		// RFC 6749 §2.3.1: both are form-encoded before Basic.
		req.SetBasicAuth(url.QueryEscape(auth.id), url.QueryEscape(auth.secret))
	}
	obtained := c.now()
	resp, err := c.hc.Do(req)
	if err != nil {
		return token{}, fmt.Errorf("%w: token endpoint %s: %v", ErrCredential, endpoint, transportCause(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAuthReply+1))
	switch {
	case err != nil:
		return token{}, fmt.Errorf("%w: token endpoint %s: read the reply: %v", ErrCredential, endpoint, err)
	case len(body) > maxAuthReply:
		return token{}, fmt.Errorf("%w: token endpoint %s: a reply larger than %d bytes", ErrCredential, endpoint, maxAuthReply)
	case resp.StatusCode != http.StatusOK:
		return token{}, fmt.Errorf("%w: token endpoint %s refused client %q: %w", ErrCredential, endpoint, auth.id, refusal(resp.Status, body, form.Get("grant_type")))
	}
	t, err := parseToken(body, obtained)
	if err != nil {
		return token{}, fmt.Errorf("%w: token endpoint %s: %v", ErrCredential, endpoint, err)
	}
	c.log.Info("upstream token obtained", "expires", t.Expiry)
	return t, nil
}

// transportCause is the cause of a failed request without the request
// line *url.Error puts before it.
func transportCause(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// parseToken reads a successful token response (RFC 6749 §5.1). Its
// errors never quote the reply, which holds the token.
func parseToken(body []byte, obtained time.Time) (token, error) {
	var r struct {
		AccessToken  string          `json:"access_token"`
		TokenType    string          `json:"token_type"`
		ExpiresIn    json.RawMessage `json:"expires_in"`
		RefreshToken string          `json:"refresh_token"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return token{}, errors.New("the reply is not a JSON token response")
	}
	if r.AccessToken == "" {
		return token{}, errors.New("the reply holds no access_token")
	}
	if !strings.EqualFold(r.TokenType, "bearer") {
		return token{}, fmt.Errorf("token_type %.40q: custody sends Bearer tokens only", r.TokenType)
	}
	t := token{Access: r.AccessToken, Refresh: r.RefreshToken, Obtained: obtained}
	if len(r.ExpiresIn) > 0 && string(r.ExpiresIn) != "null" {
		// Some servers send the number as a string; 0 says as little as
		// none: the token is then replaced when the server refuses it.
		secs, err := strconv.ParseFloat(strings.Trim(string(r.ExpiresIn), `"`), 64)
		if err != nil || secs < 0 || secs > 1e9 {
			return token{}, fmt.Errorf("expires_in %.40s is not a number of seconds", r.ExpiresIn)
		}
		if secs > 0 {
			t.Expiry = obtained.Add(time.Duration(secs * float64(time.Second)))
		}
	}
	return t, nil
}

// refusedError is an error reply of the authorization server.
type refusedError struct {
	// code is its OAuth error code ("" when the reply held none).
	code string
	msg  string
}

func (e *refusedError) Error() string { return e.msg }

// refusal describes an error reply of the authorization server to a
// request of grant: its status and OAuth error (RFC 6749 §5.2), with
// what to check.
func refusal(status string, body []byte, grant string) *refusedError {
	var e struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error == "" {
		return &refusedError{msg: status + " (the reply is no OAuth error response)"}
	}
	msg := status + ": " + printable(e.Error, 64)
	if e.Description != "" {
		msg += " (" + printable(e.Description, 200) + ")"
	}
	switch e.Error {
	case "invalid_client", "unauthorized_client":
		msg += ": check oauth.clientId and oauth.clientSecret"
	case "invalid_scope":
		msg += ": check oauth.scopes"
	case "invalid_target":
		msg += ": check oauth.resource (the server's url by default)"
	case "unsupported_grant_type", "unauthorized_grant_type":
		msg += ": the client must be allowed the " + grant + " grant"
	case "invalid_grant":
		if grant == "refresh_token" {
			msg += ": the authorization is no longer valid; an operator connects the server again in the console"
		}
	}
	return &refusedError{code: e.Error, msg: msg}
}

// refusedWith reports whether err holds the authorization server's
// refusal with the OAuth error code.
func refusedWith(err error, code string) bool {
	var r *refusedError
	return errors.As(err, &r) && r.code == code
}

// printable cuts s to n bytes of printable ASCII.
func printable(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, s)
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// serverMetadata is what custody reads of an authorization server's
// metadata.
type authServerMetadata struct {
	Issuer        string   `json:"issuer"`
	TokenEndpoint string   `json:"token_endpoint"`
	AuthMethods   []string `json:"token_endpoint_auth_methods_supported"`
	GrantTypes    []string `json:"grant_types_supported"`
	// What the authorization code grant reads besides (oauth_code.go).
	AuthorizationEndpoint string   `json:"authorization_endpoint"`
	RegistrationEndpoint  string   `json:"registration_endpoint"`
	CodeChallengeMethods  []string `json:"code_challenge_methods_supported"`
	ScopesSupported       []string `json:"scopes_supported"`
}

// tokenEndpoint returns the token endpoint, discovered from the issuer's
// metadata once, and sets post. Called with sem held.
func (c *credential) tokenEndpoint(ctx context.Context) (string, error) {
	if c.cfg.TokenURL != "" {
		return c.cfg.TokenURL, nil
	}
	if c.endpoint != "" {
		return c.endpoint, nil
	}
	m, err := discover(ctx, c.hc, c.cfg.Issuer)
	if err != nil {
		return "", err
	}
	if err := checkSecretURL(m.TokenEndpoint); err != nil {
		return "", fmt.Errorf("the metadata of %s names the token_endpoint %w", c.cfg.Issuer, err)
	}
	if len(m.GrantTypes) > 0 && !slices.Contains(m.GrantTypes, "client_credentials") {
		return "", fmt.Errorf("the authorization server %s does not offer the client_credentials grant (it offers %v)", c.cfg.Issuer, m.GrantTypes)
	}
	basic := len(m.AuthMethods) == 0 || slices.Contains(m.AuthMethods, "client_secret_basic")
	if !basic && !slices.Contains(m.AuthMethods, "client_secret_post") {
		return "", fmt.Errorf("the authorization server %s takes neither client_secret_basic nor client_secret_post (it takes %v)", c.cfg.Issuer, m.AuthMethods)
	}
	c.endpoint, c.post = m.TokenEndpoint, !basic
	return c.endpoint, nil
}

// discover reads the metadata of issuer: RFC 8414 first, then OpenID
// Connect discovery. The metadata must name issuer as its own.
func discover(ctx context.Context, hc *http.Client, issuer string) (authServerMetadata, error) {
	var errs []error
	for _, u := range authMetadataURLs(issuer) {
		var m authServerMetadata
		err := getJSON(ctx, hc, u, &m)
		if err == nil && strings.TrimSuffix(m.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
			err = fmt.Errorf("%s names the issuer %q, not %q", u, m.Issuer, issuer)
		}
		if err == nil && m.TokenEndpoint == "" {
			err = fmt.Errorf("%s names no token_endpoint", u)
		}
		if err == nil {
			return m, nil
		}
		errs = append(errs, err)
	}
	return authServerMetadata{}, fmt.Errorf("discover the token endpoint of %s (or give oauth.tokenUrl): %w", issuer, errors.Join(errs...))
}

// authMetadataURLs are where an issuer's metadata may be: RFC 8414 (the
// well-known path before the issuer's path), then OpenID Connect
// discovery (after it).
func authMetadataURLs(issuer string) []string {
	u, _ := url.Parse(issuer)
	path := strings.TrimSuffix(u.Path, "/")
	u.Path, u.RawPath = "/.well-known/oauth-authorization-server"+path, ""
	return []string{u.String(), strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration"}
}

// getJSON GETs u into v: a 200 with a JSON body.
func getJSON(ctx context.Context, hc *http.Client, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %v", u, transportCause(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAuthReply)).Decode(v); err != nil {
		return fmt.Errorf("%s: not JSON metadata: %v", u, err)
	}
	return nil
}
