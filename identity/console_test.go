package identity_test

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/identity"
	"github.com/custody-dev/custody/internal/idptest"
	"github.com/custody-dev/custody/internal/testclock"
)

const callback = resource + "/login/oidc/callback"

// consoleSetup runs a provider with two people and three console
// clients (custody's, one whose ID tokens carry the profile claims, and
// another application's), and custody's console client on a test clock.
func consoleSetup(t *testing.T) (*idptest.OP, *identity.Console, *testclock.Clock) {
	t.Helper()
	idp := idptest.Start(t, "")
	idp.AddUser(idptest.User{ID: "u-ana", Username: "ana", Password: "ana-password", Name: "Ana Operator", Groups: []string{"staff", "ops"}})
	idp.AddUser(idptest.User{ID: "u-bo", Username: "bo", Password: "bo-password", Name: "Bo", Groups: []string{"audit"}})
	idp.AddConsoleClient(idptest.ConsoleClient{ID: "custody-console", Secret: "console-secret", RedirectURIs: []string{callback}})
	idp.AddConsoleClient(idptest.ConsoleClient{ID: "custody-profile", Secret: "profile-secret", RedirectURIs: []string{callback}, UserinfoInIDToken: true})
	idp.AddConsoleClient(idptest.ConsoleClient{ID: "other-app", Secret: "other-secret", RedirectURIs: []string{callback}})
	clock := testclock.New(time.Now())
	return idp, newConsole(t, idp, "custody-console", "console-secret", clock), clock
}

func newConsole(t *testing.T, idp *idptest.OP, id, secret string, clock *testclock.Clock) *identity.Console {
	t.Helper()
	c, err := identity.NewConsole(identity.ConsoleConfig{Issuer: idp.Issuer, ClientID: id, ClientSecret: secret,
		RedirectURL: callback, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// attempt is one sign-in's secrets and the code the provider sent back.
type attempt struct{ state, nonce, verifier, code string }

// signIn starts a sign-in at c, logs username in at the provider's login
// page and returns the attempt.
func signIn(t *testing.T, idp *idptest.OP, c *identity.Console, username string) attempt {
	t.Helper()
	a := attempt{state: oauth2.GenerateVerifier(), nonce: oauth2.GenerateVerifier(), verifier: oauth2.GenerateVerifier()}
	u, err := c.AuthCodeURL(context.Background(), a.state, a.nonce, a.verifier)
	if err != nil {
		t.Fatal(err)
	}
	back := idp.Login(t, nil, u, username, username+"-password")
	if got := back.Scheme + "://" + back.Host + back.Path; got != callback || back.Query().Get("state") != a.state {
		t.Fatalf("the provider sent the browser to %s (state %q), want %s with the state", got, back.Query().Get("state"), callback)
	}
	a.code = back.Query().Get("code")
	return a
}

func TestConsoleSignIn(t *testing.T) {
	idp, console, clock := consoleSetup(t)
	profile := newConsole(t, idp, "custody-profile", "profile-secret", clock)
	for _, tt := range []struct {
		name    string
		console *identity.Console
	}{{"NameFromUserinfo", console}, {"NameInIDToken", profile}} {
		t.Run(tt.name, func(t *testing.T) {
			a := signIn(t, idp, tt.console, "ana")
			p, err := tt.console.Exchange(context.Background(), a.code, a.verifier, a.nonce)
			if err != nil {
				t.Fatal(err)
			}
			if p.Issuer != idp.Issuer || p.Subject != "u-ana" || p.Name != "Ana Operator" || !slices.Equal(p.Roles, []string{"staff", "ops"}) {
				t.Errorf("person %+v, want u-ana, Ana Operator, roles staff and ops", p)
			}
			if p.ID() != idp.Issuer+"#u-ana" {
				t.Errorf("ID %s", p.ID())
			}
		})
	}
}

func TestConsoleAuthCodeURL(t *testing.T) {
	idp, console, _ := consoleSetup(t)
	raw, err := console.AuthCodeURL(context.Background(), "the-state", "the-nonce", "the-verifier-the-verifier-the-verifier-0123")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(raw)
	q := u.Query()
	want := map[string]string{"client_id": "custody-console", "redirect_uri": callback, "response_type": "code", "state": "the-state",
		"nonce": "the-nonce", "code_challenge_method": "S256", "code_challenge": oauth2.S256ChallengeFromVerifier("the-verifier-the-verifier-the-verifier-0123"),
		"scope": "openid profile email"}
	for k, v := range want {
		if q.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, q.Get(k), v)
		}
	}
	if q.Has("code_verifier") || q.Has("client_secret") {
		t.Errorf("the authorization URL carries a secret: %s", raw)
	}
	if got := u.Scheme + "://" + u.Host; got != idp.URL {
		t.Errorf("authorization endpoint %s, want the provider's (from its discovery document)", raw)
	}
}

func TestConsoleRefusals(t *testing.T) {
	idp, console, clock := consoleSetup(t)
	other := newConsole(t, idp, "other-app", "other-secret", clock)
	tests := []struct {
		name string
		try  func(a attempt) error
		kind string
		want error
	}{
		{"PKCEWrongVerifier", func(a attempt) error {
			_, err := console.Exchange(context.Background(), a.code, oauth2.GenerateVerifier(), a.nonce)
			return err
		}, custody.EUNAUTHORIZED, nil},
		{"PKCEMissingVerifier", func(a attempt) error {
			_, err := console.Exchange(context.Background(), a.code, "", a.nonce)
			return err
		}, custody.EUNAUTHORIZED, nil},
		{"NonceMismatch", func(a attempt) error {
			_, err := console.Exchange(context.Background(), a.code, a.verifier, "another-sign-in's-nonce")
			return err
		}, custody.EUNAUTHORIZED, identity.ErrNonce},
		{"CodeReplayed", func(a attempt) error {
			if _, err := console.Exchange(context.Background(), a.code, a.verifier, a.nonce); err != nil {
				t.Fatalf("first exchange: %v", err)
			}
			_, err := console.Exchange(context.Background(), a.code, a.verifier, a.nonce)
			return err
		}, custody.EUNAUTHORIZED, nil},
		{"Expired", func(a attempt) error {
			clock.Add(2 * time.Hour) // past the ID token's hour: the last case
			_, err := console.Exchange(context.Background(), a.code, a.verifier, a.nonce)
			return err
		}, custody.EUNAUTHORIZED, identity.ErrExpired},
	}
	t.Run("WrongAudience", func(t *testing.T) {
		// A real ID token the provider issued to another application.
		a := signIn(t, idp, other, "ana")
		tok := rawIDToken(t, idp, a, "other-app", "other-secret")
		if _, err := identity.VerifyIDToken(other, context.Background(), tok, a.nonce); err != nil {
			t.Fatalf("the other application's own check: %v", err)
		}
		_, err := identity.VerifyIDToken(console, context.Background(), tok, a.nonce)
		if !errors.Is(err, identity.ErrIDTokenAudience) || custody.ErrorKind(err) != custody.EUNAUTHORIZED {
			t.Fatalf("%v, want ErrIDTokenAudience", err)
		}
		if msg := custody.ErrorMessage(err); !strings.Contains(msg, "wrong audience") || strings.Contains(msg, tok) {
			t.Errorf("message %q", msg)
		}
	})
	t.Run("OtherKey", func(t *testing.T) {
		// The trusted issuer's name, another key.
		impostor := idptest.Start(t, idp.Issuer)
		impostor.AddUser(idptest.User{ID: "u-ana", Username: "ana", Password: "ana-password", Groups: []string{"ops"}})
		impostor.AddConsoleClient(idptest.ConsoleClient{ID: "custody-console", Secret: "console-secret", RedirectURIs: []string{callback}})
		a := attempt{nonce: "n-0123456789", verifier: oauth2.GenerateVerifier(), state: "s"}
		oc := oauth2.Config{ClientID: "custody-console", RedirectURL: callback, Scopes: []string{"openid"},
			Endpoint: oauth2.Endpoint{AuthURL: impostor.URL + "/authorize"}}
		back := impostor.Login(t, nil, oc.AuthCodeURL(a.state, oauth2.S256ChallengeOption(a.verifier), oauth2.SetAuthURLParam("nonce", a.nonce)), "ana", "ana-password")
		a.code = back.Query().Get("code")
		tok := rawIDToken(t, impostor, a, "custody-console", "console-secret")
		if _, err := identity.VerifyIDToken(console, context.Background(), tok, a.nonce); !errors.Is(err, identity.ErrSignature) {
			t.Fatalf("an ID token signed by another key: %v, want ErrSignature", err)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.try(signIn(t, idp, console, "ana"))
			if custody.ErrorKind(err) != tt.kind || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Fatalf("%v (kind %s), want %s %v", err, custody.ErrorKind(err), tt.kind, tt.want)
			}
		})
	}
}

// rawIDToken redeems a's code as client id at the provider and returns
// the ID token, unverified.
func rawIDToken(t *testing.T, idp *idptest.OP, a attempt, id, secret string) string {
	t.Helper()
	oc := oauth2.Config{ClientID: id, ClientSecret: secret, RedirectURL: callback,
		Endpoint: oauth2.Endpoint{TokenURL: idp.URL + "/oauth/token", AuthStyle: oauth2.AuthStyleInHeader}}
	tok, err := oc.Exchange(context.Background(), a.code, oauth2.VerifierOption(a.verifier))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		t.Fatal("no ID token")
	}
	return raw
}

func TestRolesClaim(t *testing.T) {
	claims := map[string]any{
		"groups":                    []any{"ops", 7, "audit"},
		"role":                      "operator on call",
		"realm_access":              map[string]any{"roles": []any{"ops"}},
		"https://example.com/roles": []any{"audit"},
	}
	for _, tt := range []struct {
		claim string
		want  []string
	}{
		{"groups", []string{"ops", "audit"}},
		{"role", []string{"operator on call"}},
		{"realm_access.roles", []string{"ops"}},
		{"https://example.com/roles", []string{"audit"}},
		{"missing", nil},
		{"realm_access.missing", nil},
	} {
		if got := identity.ClaimValues(claims, tt.claim); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.claim, got, tt.want)
		}
	}
}
