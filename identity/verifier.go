package identity

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults of Config.
const (
	DefaultLeeway                 = 30 * time.Second
	DefaultKeyRefresh             = 30 * time.Second
	DefaultIntrospectionCap       = 5 * time.Minute
	defaultAgentClaim             = "sub"
	defaultHTTPTimeout            = 10 * time.Second
	maxMetadataBytes        int64 = 1 << 20
)

// Config is what a Verifier trusts.
type Config struct {
	// Resource is custody's resource identifier (its base URL, e.g.
	// "https://custody.example.com"): the audience tokens must name,
	// unless an issuer sets its own.
	Resource string
	Issuers  []Issuer
	// Leeway is the clock skew allowed on exp and nbf (DefaultLeeway when
	// zero).
	Leeway time.Duration
	// KeyRefresh is the least time between two fetches of an issuer's
	// keys, so that tokens with unknown key ids cannot make custody
	// hammer the issuer (DefaultKeyRefresh when zero).
	KeyRefresh time.Duration
	// IntrospectionCap bounds how long an introspected token's answer is
	// kept (it is kept until the token's expiry, at most this long): the
	// longest a revoked opaque token is still accepted
	// (DefaultIntrospectionCap when zero).
	IntrospectionCap time.Duration
	// Client fetches metadata, keys and introspections; one with a 10s
	// timeout when nil.
	Client *http.Client
	Now    func() time.Time
}

// Issuer is one trusted authorization server.
type Issuer struct {
	// Issuer is its issuer identifier, exactly as its tokens' iss and its
	// metadata name it.
	Issuer string
	// Audience is the audience its tokens must name: Config.Resource when
	// empty. The resource's /mcp URL, which the /mcp metadata document
	// names, is accepted too.
	Audience string
	// AgentClaim is the claim naming the agent ("sub" when empty);
	// GroupsClaim the claim listing its groups (none when empty).
	AgentClaim, GroupsClaim string
	// Algs are the JWS algorithms its tokens may be signed with; RS256
	// when empty. "none" is never allowed.
	Algs []string
	// Introspection, when set, lets custody check opaque tokens at the
	// issuer's introspection endpoint with its own client credentials.
	Introspection *Introspection
}

// Introspection is custody's client at an issuer's RFC 7662 endpoint.
type Introspection struct {
	ClientID, ClientSecret string
	// Endpoint overrides the introspection_endpoint of the metadata.
	Endpoint string
}

// Verifier checks bearer tokens against the trusted issuers. It is safe
// for concurrent use.
type Verifier struct {
	cfg     Config
	issuers map[string]*issuer
	order   []*issuer
	cache   *introspections
}

// New returns a verifier of cfg, or an error naming what is wrong. It
// reaches no issuer: metadata and keys are fetched on first use.
func New(cfg Config) (*Verifier, error) {
	if _, err := resourceURL(cfg.Resource); err != nil {
		return nil, err
	}
	cfg.Leeway = cmp.Or(cfg.Leeway, DefaultLeeway)
	cfg.KeyRefresh = cmp.Or(cfg.KeyRefresh, DefaultKeyRefresh)
	cfg.IntrospectionCap = cmp.Or(cfg.IntrospectionCap, DefaultIntrospectionCap)
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: defaultHTTPTimeout}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	v := &Verifier{cfg: cfg, issuers: map[string]*issuer{}, cache: newIntrospections()}
	for i, c := range cfg.Issuers {
		is, err := newIssuer(c, &v.cfg)
		if err != nil {
			return nil, fmt.Errorf("issuers[%d]: %w", i, err)
		}
		if v.issuers[c.Issuer] != nil {
			return nil, fmt.Errorf("issuers[%d]: issuer %q is given twice", i, c.Issuer)
		}
		v.issuers[c.Issuer] = is
		v.order = append(v.order, is)
	}
	return v, nil
}

// resourceURL checks that resource is an absolute https (or, for local
// use, http) URL without query or fragment (RFC 9728 section 1.2).
func resourceURL(resource string) (*url.URL, error) {
	u, err := url.Parse(resource)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("resource %q must be custody's absolute URL, without query or fragment", resource)
	}
	return u, nil
}

// Issuers returns the identifiers of the trusted issuers, in order.
func (v *Verifier) Issuers() []string {
	out := make([]string, len(v.order))
	for i, is := range v.order {
		out[i] = is.cfg.Issuer
	}
	return out
}

// Resource returns custody's resource identifier.
func (v *Verifier) Resource() string { return v.cfg.Resource }

// Verify returns the principal of token. A refused token is a custody
// EUNAUTHORIZED error whose message says why (see the Err* reasons) and
// never holds the token; an issuer that cannot be reached is refused with
// ErrUnavailable.
func (v *Verifier) Verify(ctx context.Context, token string) (Principal, error) {
	if h, claims, ok := splitJWT(token); ok {
		return v.verifyJWT(ctx, token, h, claims)
	}
	return v.introspect(ctx, token)
}

// jwtHeader is the part of a JWS header Verify reads before trusting it.
type jwtHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	Typ string `json:"typ"`
}

// splitJWT decodes, unverified, the header and claims of a compact JWS:
// ok is false for anything else (an opaque token).
func splitJWT(token string) (jwtHeader, map[string]any, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return jwtHeader{}, nil, false
	}
	var h jwtHeader
	var claims map[string]any
	if decodeSegment(parts[0], &h) != nil || h.Alg == "" || decodeSegment(parts[1], &claims) != nil {
		return jwtHeader{}, nil, false
	}
	return h, claims, true
}

func decodeSegment(seg string, into any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, into)
}

// claimString returns claims[name] when it is a string.
func claimString(claims map[string]any, name string) string {
	s, _ := claims[name].(string)
	return s
}

// claimStrings returns claims[name] as a list: a JSON array of strings,
// or one string (space separated, as scope is).
func claimStrings(claims map[string]any, name string) []string {
	switch t := claims[name].(type) {
	case string:
		return strings.Fields(t)
	case []any:
		var out []string
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// checkTimes checks exp (required) and nbf against now with leeway; a
// refusal is made by refuse.
func (c *Config) checkTimes(claims map[string]any, refuse func(reason, cause error) error) error {
	now := c.Now()
	exp, ok := claimTime(claims, "exp")
	if !ok {
		return refuse(ErrExpired, errors.New("no exp claim"))
	}
	if now.After(exp.Add(c.Leeway)) {
		return refuse(ErrExpired, nil)
	}
	if nbf, ok := claimTime(claims, "nbf"); ok && now.Add(c.Leeway).Before(nbf) {
		return refuse(ErrNotYetValid, nil)
	}
	return nil
}

func claimTime(claims map[string]any, name string) (time.Time, bool) {
	f, ok := claims[name].(float64)
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(int64(f), 0), true
}

// principal builds the principal of checked claims.
func (is *issuer) principal(claims map[string]any) (Principal, error) {
	sub := claimString(claims, is.cfg.AgentClaim)
	if sub == "" {
		return Principal{}, refuse(ErrNoSubject, nil)
	}
	p := Principal{Issuer: is.cfg.Issuer, Subject: sub,
		ClientID: cmp.Or(claimString(claims, "client_id"), claimString(claims, "azp"))}
	if is.cfg.GroupsClaim != "" {
		p.Groups = claimStrings(claims, is.cfg.GroupsClaim)
	}
	return p, nil
}
