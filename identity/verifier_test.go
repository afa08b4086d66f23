package identity_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/identity"
	"github.com/custody-dev/custody/internal/idptest"
	"github.com/custody-dev/custody/internal/testclock"
)

const resource = "https://custody.example.com"

// setup runs a provider with a JWT client, an opaque client, a client
// whose tokens are for another resource, and a verifier trusting it on a
// test clock.
func setup(t *testing.T) (*idptest.OP, *identity.Verifier, *testclock.Clock) {
	t.Helper()
	idp := idptest.Start(t, "")
	idp.AddClient(idptest.Client{ID: "agent-42", Secret: "s42", JWT: true, Audience: []string{resource}, Groups: []string{"sre"}})
	idp.AddClient(idptest.Client{ID: "agent-opaque", Secret: "so", Audience: []string{resource, idptest.IntrospectorID}, Groups: []string{"ops"}})
	idp.AddClient(idptest.Client{ID: "agent-elsewhere", Secret: "se", JWT: true, Audience: []string{"https://other.example.com"}})
	clock := testclock.New(time.Now())
	v, err := identity.New(identity.Config{Resource: resource, Now: clock.Now, Issuers: []identity.Issuer{{
		Issuer: idp.Issuer, Audience: resource, GroupsClaim: "groups", Algs: []string{"RS256", "ES256"},
		Introspection: &identity.Introspection{ClientID: idptest.IntrospectorID, ClientSecret: idptest.IntrospectorSecret},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return idp, v, clock
}

func TestVerifyJWT(t *testing.T) {
	idp, v, _ := setup(t)
	p, err := v.Verify(context.Background(), idp.Token(t, "agent-42"))
	if err != nil {
		t.Fatal(err)
	}
	if p.ID() != idp.Issuer+"#agent-42" || p.ClientID != "agent-42" || !p.InGroup("sre") {
		t.Errorf("principal %+v (ID %s), want issuer#agent-42 in group sre", p, p.ID())
	}
}

func TestVerifyRefusals(t *testing.T) {
	idp, v, clock := setup(t)
	other := idptest.Start(t, "")            // an issuer custody does not trust
	impostor := idptest.Start(t, idp.Issuer) // the trusted issuer's name, another key
	for _, o := range []*idptest.OP{other, impostor} {
		o.AddClient(idptest.Client{ID: "agent-42", Secret: "s42", JWT: true, Audience: []string{resource}})
	}
	good := idp.Token(t, "agent-42")
	tests := []struct {
		name  string
		token func() string
		want  error
	}{
		{"ErrAudience", func() string { return idp.Token(t, "agent-elsewhere") }, identity.ErrAudience},
		{"ErrUnknownIssuer", func() string { return other.Token(t, "agent-42") }, identity.ErrUnknownIssuer},
		{"ErrAlgNone", func() string { return algNone(good) }, identity.ErrAlg},
		{"ErrSignatureOtherKey", func() string { return impostor.Token(t, "agent-42") }, identity.ErrSignature},
		{"ErrSignatureTampered", func() string { return tamper(good) }, identity.ErrSignature},
		{"ErrInactive", func() string { return "not-a-token-the-idp-issued" }, identity.ErrInactive},
		{"ErrExpired", func() string { tok := idp.Token(t, "agent-42"); clock.Add(6 * time.Minute); return tok }, identity.ErrExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := tt.token()
			_, err := v.Verify(context.Background(), tok)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Verify: %v, want %v", err, tt.want)
			}
			if custody.ErrorKind(err) != custody.EUNAUTHORIZED {
				t.Errorf("kind %s, want unauthorized", custody.ErrorKind(err))
			}
			if msg := custody.ErrorMessage(err); strings.Contains(msg, tok) || !strings.Contains(msg, tt.want.Error()) {
				t.Errorf("message %q should give the reason and not the token", msg)
			}
		})
	}
}

// algNone is a real token with its header replaced by {"alg":"none"} and
// its signature dropped.
func algNone(tok string) string {
	parts := strings.Split(tok, ".")
	return base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."
}

// tamper is a real token with a claim changed after signing.
func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	payload = []byte(strings.Replace(string(payload), `"sub":"agent-42"`, `"sub":"agent-root"`, 1))
	return parts[0] + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + parts[2]
}

func TestVerifyIntrospection(t *testing.T) {
	idp, v, clock := setup(t)
	tok := idp.Token(t, "agent-opaque")
	p, err := v.Verify(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if p.ID() != idp.Issuer+"#agent-opaque" || !p.InGroup("ops") {
		t.Errorf("principal %+v, want issuer#agent-opaque in ops", p)
	}
	revoked := idp.Token(t, "agent-opaque")
	idp.Revoke(t, "agent-opaque", revoked)
	if _, err := v.Verify(context.Background(), revoked); !errors.Is(err, identity.ErrInactive) {
		t.Errorf("revoked token: %v, want ErrInactive", err)
	}
	// An accepted answer is kept (the provider is not asked again) until
	// the cap, after which a revocation shows.
	idp.Revoke(t, "agent-opaque", tok)
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Errorf("cached token: %v", err)
	}
	clock.Add(identity.DefaultIntrospectionCap)
	if _, err := v.Verify(context.Background(), tok); !errors.Is(err, identity.ErrInactive) {
		t.Errorf("revoked token after the cache cap: %v, want ErrInactive", err)
	}
}

func TestMetadata(t *testing.T) {
	m, err := identity.NewMetadata(resource, []string{"https://idp.example.com"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, mcp := m.Paths()
	if res != "/.well-known/oauth-protected-resource" || mcp != "/.well-known/oauth-protected-resource/mcp" {
		t.Errorf("paths %s %s", res, mcp)
	}
	rec := httptest.NewRecorder()
	m.Handler(true).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, mcp, nil))
	want := `{"resource":"https://custody.example.com/mcp","authorization_servers":["https://idp.example.com"],"bearer_methods_supported":["header"],"resource_name":"custody"}`
	if got := strings.TrimSpace(rec.Body.String()); got != want {
		t.Errorf("document\n got %s\nwant %s", got, want)
	}
	refused := &custody.Error{Kind: custody.EUNAUTHORIZED, Err: &identity.Refusal{Reason: identity.ErrExpired}}
	if got, want := m.Challenge(true, refused), `Bearer resource_metadata="https://custody.example.com/.well-known/oauth-protected-resource/mcp", error="invalid_token", error_description="the token has expired"`; got != want {
		t.Errorf("challenge\n got %s\nwant %s", got, want)
	}
}

// TestVerifyAfterKeyRotation: the provider rotates its signing key while
// custody runs. A token under the new key is refused until the key set
// may be fetched again (KeyRefresh: no hammering the issuer on unknown
// kids), then accepted with no restart; a token under the old key still
// verifies.
func TestVerifyAfterKeyRotation(t *testing.T) {
	idp, v, clock := setup(t)
	old := idp.Token(t, "agent-42")
	if _, err := v.Verify(context.Background(), old); err != nil {
		t.Fatalf("before the rotation: %v", err)
	}
	idp.RotateKey(t)
	rotated := idp.Token(t, "agent-42")
	if _, err := v.Verify(context.Background(), rotated); !errors.Is(err, identity.ErrSignature) {
		t.Fatalf("a new kid within KeyRefresh of the last fetch: %v, want %v", err, identity.ErrSignature)
	}
	clock.Add(identity.DefaultKeyRefresh)
	p, err := v.Verify(context.Background(), rotated)
	if err != nil {
		t.Fatalf("after the rotation, KeyRefresh later: %v", err)
	}
	if p.ID() != idp.Issuer+"#agent-42" {
		t.Errorf("principal %s", p.ID())
	}
	if _, err := v.Verify(context.Background(), old); err != nil {
		t.Errorf("a token under the previous key: %v", err)
	}
}
