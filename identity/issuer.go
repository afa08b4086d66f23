package identity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/custody-dev/custody"
)

// issuer is one trusted issuer with its metadata and keys, fetched on
// first use and refreshed at most every KeyRefresh.
type issuer struct {
	cfg       Issuer
	v         *Config
	audiences []string
	algs      []jose.SignatureAlgorithm

	mu        sync.Mutex
	meta      *ServerMetadata
	keys      jose.JSONWebKeySet
	fetchedAt time.Time // of the last fetch of the keys, or its attempt
}

// ServerMetadata is what custody reads of an issuer's OIDC discovery or
// RFC 8414 metadata.
type ServerMetadata struct {
	Issuer                string `json:"issuer"`
	JWKSURI               string `json:"jwks_uri"`
	IntrospectionEndpoint string `json:"introspection_endpoint"`
	AuthorizationEndpoint string `json:"authorization_endpoint"`
	TokenEndpoint         string `json:"token_endpoint"`
	UserinfoEndpoint      string `json:"userinfo_endpoint"`
	// The lists are empty when the issuer does not publish them.
	ScopesSupported                   []string `json:"scopes_supported"`
	ClaimsSupported                   []string `json:"claims_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	IDTokenSigningAlgValuesSupported  []string `json:"id_token_signing_alg_values_supported"`
	// URL is where the document was found.
	URL string `json:"-"`
}

// checkIssuerURL refuses an issuer identifier that is no absolute URL.
func checkIssuerURL(iss string) error {
	if u, err := url.Parse(iss); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("issuer %q must be an absolute URL", iss)
	}
	return nil
}

func newIssuer(c Issuer, v *Config) (*issuer, error) {
	if err := checkIssuerURL(c.Issuer); err != nil {
		return nil, err
	}
	if c.AgentClaim == "" {
		c.AgentClaim = defaultAgentClaim
	}
	if len(c.Algs) == 0 {
		c.Algs = []string{string(jose.RS256)}
	}
	is := &issuer{cfg: c, v: v}
	for _, a := range c.Algs {
		alg := jose.SignatureAlgorithm(a)
		if !slices.Contains(signatureAlgs, alg) {
			return nil, fmt.Errorf("alg %q is not an asymmetric JWS algorithm custody verifies (%v)", a, signatureAlgs)
		}
		is.algs = append(is.algs, alg)
	}
	aud := c.Audience
	if aud == "" {
		aud = v.Resource
	}
	is.audiences = []string{aud, strings.TrimSuffix(v.Resource, "/") + "/mcp"}
	if c.Introspection != nil && (c.Introspection.ClientID == "" || c.Introspection.ClientSecret == "") {
		return nil, errors.New("introspection needs clientId and clientSecret")
	}
	return is, nil
}

// signatureAlgs are the algorithms an issuer may be configured with:
// asymmetric only, as custody holds no shared secret of the issuer.
var signatureAlgs = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}

// metadata returns the issuer's metadata, fetching it once it is needed.
// A failed fetch is retried no sooner than KeyRefresh later.
func (is *issuer) metadata(ctx context.Context) (*ServerMetadata, error) {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.metadataLocked(ctx)
}

func (is *issuer) metadataLocked(ctx context.Context) (*ServerMetadata, error) {
	if is.meta != nil {
		return is.meta, nil
	}
	var errs []error
	mismatch := false
	for _, u := range metadataURLs(is.cfg.Issuer) {
		var m ServerMetadata
		err := is.getJSON(ctx, u, &m)
		if err == nil && m.Issuer != is.cfg.Issuer {
			err, mismatch = fmt.Errorf("%s names the issuer %q, not %q", u, m.Issuer, is.cfg.Issuer), true
		}
		if err == nil {
			m.URL = u
			is.meta = &m
			return &m, nil
		}
		errs = append(errs, err)
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	err := &custody.Error{Kind: custody.EUNAVAILABLE, Err: errors.Join(errs...),
		Message: fmt.Sprintf("metadata of %s: %s", is.cfg.Issuer, strings.Join(msgs, "; "))}
	if mismatch {
		// Reaching the issuer again will not mend its configuration.
		err.Kind = custody.EINVALID
	}
	return nil, err
}

// Discover fetches the metadata of the issuer iss (OpenID Connect
// discovery, then RFC 8414) with client, as custody reads it when it
// first needs it. Errors: EINVALID when a document names another issuer,
// EUNAVAILABLE when none could be fetched.
func Discover(ctx context.Context, client *http.Client, iss string) (ServerMetadata, error) {
	if err := checkIssuerURL(iss); err != nil {
		return ServerMetadata{}, &custody.Error{Kind: custody.EINVALID, Message: err.Error()}
	}
	if client == nil {
		client = &http.Client{Timeout: defaultHTTPTimeout}
	}
	is := &issuer{cfg: Issuer{Issuer: iss}, v: &Config{Client: client}}
	m, err := is.metadata(ctx)
	if err != nil {
		return ServerMetadata{}, err
	}
	return *m, nil
}

// metadataURLs are where an issuer's metadata may be: OpenID Connect
// discovery, then RFC 8414 (the well-known path before the issuer's path).
func metadataURLs(iss string) []string {
	u, _ := url.Parse(iss)
	path := strings.TrimSuffix(u.Path, "/")
	oidc := strings.TrimSuffix(iss, "/") + "/.well-known/openid-configuration"
	u.Path = "/.well-known/oauth-authorization-server" + path
	return []string{oidc, u.String()}
}

// key returns the issuer's key kid, fetching the key set when it does not
// hold kid and the last fetch is KeyRefresh old.
func (is *issuer) key(ctx context.Context, kid string, alg jose.SignatureAlgorithm) ([]jose.JSONWebKey, error) {
	is.mu.Lock()
	defer is.mu.Unlock()
	if ks := matching(is.keys, kid, alg); len(ks) > 0 {
		return ks, nil
	}
	now := is.v.Now()
	if !is.fetchedAt.IsZero() && now.Sub(is.fetchedAt) < is.v.KeyRefresh {
		return nil, nil
	}
	is.fetchedAt = now
	meta, err := is.metadataLocked(ctx)
	if err != nil {
		return nil, err
	}
	var set jose.JSONWebKeySet
	if err := is.getJSON(ctx, meta.JWKSURI, &set); err != nil {
		return nil, fmt.Errorf("keys of %s: %w", is.cfg.Issuer, err)
	}
	is.keys = set
	return matching(set, kid, alg), nil
}

// matching returns the public signing keys of set that kid names (all of
// them when kid is empty) and that may verify alg.
func matching(set jose.JSONWebKeySet, kid string, alg jose.SignatureAlgorithm) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for _, k := range set.Keys {
		if (kid != "" && k.KeyID != kid) || (k.Use != "" && k.Use != "sig") || (k.Algorithm != "" && k.Algorithm != string(alg)) {
			continue
		}
		if k.IsPublic() {
			out = append(out, k)
		}
	}
	return out
}

// getJSON GETs u and decodes its JSON answer into v.
func (is *issuer) getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	return is.doJSON(req, v)
}

// doJSON sends req and decodes its 200 answer, a JSON document, into v.
func (is *issuer) doJSON(req *http.Request, v any) error {
	req.Header.Set("Accept", "application/json")
	resp, err := is.v.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s", req.Method, req.URL.Redacted(), resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, maxMetadataBytes)).Decode(v)
}
