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
)

// issuer is one trusted issuer with its metadata and keys, fetched on
// first use and refreshed at most every KeyRefresh.
type issuer struct {
	cfg       Issuer
	v         *Config
	audiences []string
	algs      []jose.SignatureAlgorithm

	mu        sync.Mutex
	meta      *serverMetadata
	keys      jose.JSONWebKeySet
	fetchedAt time.Time // of the last fetch of the keys, or its attempt
}

// serverMetadata is what custody reads of the OIDC discovery or RFC 8414
// metadata.
type serverMetadata struct {
	Issuer                string `json:"issuer"`
	JWKSURI               string `json:"jwks_uri"`
	IntrospectionEndpoint string `json:"introspection_endpoint"`
}

func newIssuer(c Issuer, v *Config) (*issuer, error) {
	if u, err := url.Parse(c.Issuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("issuer %q must be an absolute URL", c.Issuer)
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
func (is *issuer) metadata(ctx context.Context) (*serverMetadata, error) {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.metadataLocked(ctx)
}

func (is *issuer) metadataLocked(ctx context.Context) (*serverMetadata, error) {
	if is.meta != nil {
		return is.meta, nil
	}
	var errs []error
	for _, u := range metadataURLs(is.cfg.Issuer) {
		var m serverMetadata
		err := is.getJSON(ctx, u, &m)
		if err == nil && m.Issuer != is.cfg.Issuer {
			err = fmt.Errorf("%s names the issuer %q, not %q", u, m.Issuer, is.cfg.Issuer)
		}
		if err == nil {
			is.meta = &m
			return &m, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("metadata of %s: %w", is.cfg.Issuer, errors.Join(errs...))
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
	req.Header.Set("Accept", "application/json")
	resp, err := is.v.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, maxMetadataBytes)).Decode(v)
}
