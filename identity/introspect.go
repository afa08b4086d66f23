package identity

import (
	"bytes"
	"context"
	"crypto/sha256"
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
)

// maxIntrospections bounds the cache of introspected tokens.
const maxIntrospections = 10000

// introspect checks an opaque token at the introspection endpoint of each
// issuer custody introspects with, in order, until one knows it.
func (v *Verifier) introspect(ctx context.Context, token string) (Principal, error) {
	key := sha256.Sum256([]byte(token))
	now := v.cfg.Now()
	if p, ok := v.cache.get(key, now); ok {
		return p, nil
	}
	var unreachable error
	tried := false
	for _, is := range v.order {
		if is.cfg.Introspection == nil {
			continue
		}
		tried = true
		claims, err := is.introspect(ctx, token)
		if err != nil {
			unreachable = errors.Join(unreachable, err)
			continue
		}
		if active, _ := claims["active"].(bool); !active {
			continue
		}
		p, until, err := v.acceptIntrospected(is, claims)
		if err != nil {
			return Principal{}, err
		}
		v.cache.put(key, p, until, now)
		return p, nil
	}
	switch {
	case !tried:
		return Principal{}, refuse(ErrMalformed, nil)
	case unreachable != nil:
		return Principal{}, refuse(ErrUnavailable, unreachable)
	}
	return Principal{}, refuse(ErrInactive, nil)
}

// acceptIntrospected checks an active introspection answer as a JWT's
// claims are checked (the issuer, when named, expiry, audience, when
// named) and returns its principal and how long it may be cached.
func (v *Verifier) acceptIntrospected(is *issuer, claims map[string]any) (Principal, time.Time, error) {
	if iss := claimString(claims, "iss"); iss != "" && iss != is.cfg.Issuer {
		return Principal{}, time.Time{}, refuse(ErrUnknownIssuer, nil)
	}
	if err := v.cfg.checkTimes(claims, refuse); err != nil {
		return Principal{}, time.Time{}, err
	}
	if aud := claimStrings(claims, "aud"); len(aud) > 0 &&
		!slices.ContainsFunc(aud, func(a string) bool { return slices.Contains(is.audiences, a) }) {
		return Principal{}, time.Time{}, refuse(ErrAudience, nil)
	}
	p, err := is.principal(claims)
	if err != nil {
		return Principal{}, time.Time{}, err
	}
	exp, _ := claimTime(claims, "exp")
	return p, earlier(exp, v.cfg.Now().Add(v.cfg.IntrospectionCap)), nil
}

// earlier returns the earlier of two times.
func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// introspect asks the issuer about token with custody's credentials
// (client_secret_basic) and returns the answer's members.
func (is *issuer) introspect(ctx context.Context, token string) (map[string]any, error) {
	endpoint := is.cfg.Introspection.Endpoint
	if endpoint == "" {
		meta, err := is.metadata(ctx)
		if err != nil {
			return nil, err
		}
		if endpoint = meta.IntrospectionEndpoint; endpoint == "" {
			return nil, fmt.Errorf("%s publishes no introspection_endpoint", is.cfg.Issuer)
		}
	}
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(is.cfg.Introspection.ClientID), url.QueryEscape(is.cfg.Introspection.ClientSecret))
	resp, err := is.v.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("introspect at %s: %w", endpoint, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("introspect at %s: %s", endpoint, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes))
	if err != nil {
		return nil, fmt.Errorf("introspect at %s: %w", endpoint, err)
	}
	var claims map[string]any
	if err := decodeJSON(body, &claims); err != nil {
		return nil, fmt.Errorf("introspect at %s: %w", endpoint, err)
	}
	return claims, nil
}

// decodeJSON decodes one JSON object.
func decodeJSON(b []byte, into any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	return dec.Decode(into)
}

// introspections caches accepted introspections by the SHA-256 of their
// token, never the token.
type introspections struct {
	mu sync.Mutex
	m  map[[32]byte]cached
}

type cached struct {
	p     Principal
	until time.Time
}

func newIntrospections() *introspections { return &introspections{m: map[[32]byte]cached{}} }

func (c *introspections) get(key [32]byte, now time.Time) (Principal, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok || !now.Before(e.until) {
		delete(c.m, key)
		return Principal{}, false
	}
	return e.p, true
}

func (c *introspections) put(key [32]byte, p Principal, until, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxIntrospections {
		for k, e := range c.m {
			if !now.Before(e.until) || len(c.m) >= maxIntrospections {
				delete(c.m, k)
			}
		}
	}
	c.m[key] = cached{p: p, until: until}
}
