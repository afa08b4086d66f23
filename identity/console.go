package identity

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"golang.org/x/oauth2"

	"github.com/custody-dev/custody"
)

// DefaultRolesClaim is the claim a console sign-in reads roles from when
// ConsoleConfig.RolesClaim is empty.
const DefaultRolesClaim = "groups"

// ConsoleConfig is custody's client at the team's OpenID provider, which
// signs operators and auditors in to the console.
type ConsoleConfig struct {
	// Issuer is the provider's issuer identifier: its metadata is found
	// by OpenID Connect discovery, nothing else needs copying by hand.
	Issuer string
	// ClientID and ClientSecret are custody's client at the provider; no
	// secret makes a public client, which PKCE alone protects.
	ClientID, ClientSecret string
	// RedirectURL is custody's callback, as registered at the provider.
	RedirectURL string
	// RolesClaim is the claim whose values make roles (DefaultRolesClaim
	// when empty): a string or a list, by name, or by a dotted path into
	// nested objects ("realm_access.roles") when no claim has that name.
	RolesClaim string
	// Scopes are asked for beside openid, profile and email (the last two
	// only when the provider lists them or lists no scopes).
	Scopes []string
	// Leeway, KeyRefresh, Client and Now are as in Config.
	Leeway, KeyRefresh time.Duration
	Client             *http.Client
	Now                func() time.Time
}

// Person is someone the provider signed in: Issuer and Subject say who
// for good, Name how to show them, Roles are the values of the roles
// claim.
type Person struct {
	Issuer, Subject, Name string
	Roles                 []string
}

// ID is the person as custody names principals: ISSUER#SUBJECT.
func (p Person) ID() string { return Principal{Issuer: p.Issuer, Subject: p.Subject}.ID() }

// Console signs people in at the provider with the authorization code
// flow, PKCE (S256) and a nonce, and verifies the ID token it gets back:
// signature with the provider's published keys, issuer, audience (and
// azp), expiry, nonce. It is safe for concurrent use.
type Console struct {
	cfg ConsoleConfig
	vc  Config
	is  *issuer
}

// NewConsole returns the client of c, or an error naming what is wrong.
// It reaches no provider: the metadata and keys are fetched on first use.
func NewConsole(c ConsoleConfig) (*Console, error) {
	if err := checkIssuerURL(c.Issuer); err != nil {
		return nil, err
	}
	if c.ClientID == "" {
		return nil, errors.New("the console's clientId is required")
	}
	if u, err := url.Parse(c.RedirectURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("the console's redirect URL %q must be absolute", c.RedirectURL)
	}
	c.RolesClaim = cmp.Or(c.RolesClaim, DefaultRolesClaim)
	con := &Console{cfg: c, vc: Config{Leeway: cmp.Or(c.Leeway, DefaultLeeway),
		KeyRefresh: cmp.Or(c.KeyRefresh, DefaultKeyRefresh), Client: c.Client, Now: c.Now}}
	if con.vc.Client == nil {
		con.vc.Client = &http.Client{Timeout: defaultHTTPTimeout}
	}
	if con.vc.Now == nil {
		con.vc.Now = time.Now
	}
	con.is = &issuer{cfg: Issuer{Issuer: c.Issuer}, v: &con.vc, algs: signatureAlgs}
	return con, nil
}

// Issuer returns the provider's issuer identifier.
func (c *Console) Issuer() string { return c.cfg.Issuer }

// RolesClaim returns the claim roles are read from.
func (c *Console) RolesClaim() string { return c.cfg.RolesClaim }

// RedirectURL returns custody's callback, to register at the provider.
func (c *Console) RedirectURL() string { return c.cfg.RedirectURL }

// Metadata returns the provider's metadata, fetching it on first use.
// Errors: EINVALID when it names another issuer or no authorization or
// token endpoint, EUNAVAILABLE when it cannot be fetched.
func (c *Console) Metadata(ctx context.Context) (ServerMetadata, error) {
	m, err := c.is.metadata(ctx)
	if err != nil {
		return ServerMetadata{}, err
	}
	if m.AuthorizationEndpoint == "" || m.TokenEndpoint == "" {
		return ServerMetadata{}, custody.Errorf(custody.EINVALID,
			"%s names no authorization_endpoint or token_endpoint: the provider cannot sign operators in with the authorization code flow", m.URL)
	}
	return *m, nil
}

// Scopes returns the scopes a sign-in asks for at a provider with meta.
func (c *Console) Scopes(meta ServerMetadata) []string {
	out := []string{"openid"}
	for _, s := range []string{"profile", "email"} {
		if len(meta.ScopesSupported) == 0 || slices.Contains(meta.ScopesSupported, s) {
			out = append(out, s)
		}
	}
	for _, s := range c.cfg.Scopes {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// oauth2 returns the OAuth 2.0 client of the provider's endpoints.
func (c *Console) oauth2(ctx context.Context) (*oauth2.Config, ServerMetadata, error) {
	meta, err := c.Metadata(ctx)
	if err != nil {
		return nil, meta, err
	}
	return &oauth2.Config{ClientID: c.cfg.ClientID, ClientSecret: c.cfg.ClientSecret, RedirectURL: c.cfg.RedirectURL,
		Scopes: c.Scopes(meta), Endpoint: oauth2.Endpoint{AuthURL: meta.AuthorizationEndpoint, TokenURL: meta.TokenEndpoint,
			AuthStyle: c.authStyle(meta)}}, meta, nil
}

// authStyle is how custody authenticates at the token endpoint (see
// AuthMethod).
func (c *Console) authStyle(meta ServerMetadata) oauth2.AuthStyle {
	if c.AuthMethod(meta) == "client_secret_basic" {
		return oauth2.AuthStyleInHeader
	}
	return oauth2.AuthStyleInParams
}

// AuthMethod names how custody authenticates at the token endpoint of a
// provider with meta: client_secret_basic, RFC 8414's default, unless the
// provider lists client_secret_post and not it; none for a public client,
// which sends its id alone.
func (c *Console) AuthMethod(meta ServerMetadata) string {
	methods := meta.TokenEndpointAuthMethodsSupported
	switch {
	case c.cfg.ClientSecret == "":
		return "none"
	case !slices.Contains(methods, "client_secret_basic") && slices.Contains(methods, "client_secret_post"):
		return "client_secret_post"
	}
	return "client_secret_basic"
}

// Check returns what in the provider's metadata keeps every sign-in from
// working (problems) or may (warnings), as far as the metadata lists it.
func (c *Console) Check(meta ServerMetadata) (problems, warnings []string) {
	if m := meta.CodeChallengeMethodsSupported; len(m) > 0 && !slices.Contains(m, "S256") {
		problems = append(problems, fmt.Sprintf("the provider lists PKCE methods %v, not S256, which custody uses", m))
	} else if len(m) == 0 {
		warnings = append(warnings, "the provider lists no PKCE methods (code_challenge_methods_supported); custody sends S256 anyway")
	}
	if algs := meta.IDTokenSigningAlgValuesSupported; len(algs) > 0 && !slices.ContainsFunc(algs, func(a string) bool {
		return slices.Contains(signatureAlgs, jose.SignatureAlgorithm(a))
	}) {
		problems = append(problems, fmt.Sprintf("the provider signs ID tokens with %v; custody verifies asymmetric signatures only (%v)", algs, signatureAlgs))
	}
	if m := meta.TokenEndpointAuthMethodsSupported; len(m) > 0 && !slices.Contains(m, c.AuthMethod(meta)) {
		problems = append(problems, fmt.Sprintf("the provider's token endpoint takes %v, not %s", m, c.AuthMethod(meta)))
	}
	if cl := meta.ClaimsSupported; len(cl) > 0 && !slices.Contains(cl, strings.Split(c.cfg.RolesClaim, ".")[0]) {
		warnings = append(warnings, fmt.Sprintf("the provider does not list the claim %q in claims_supported: make sure it puts it in the ID token or at userinfo", c.cfg.RolesClaim))
	}
	return problems, warnings
}

// AuthCodeURL returns the provider's authorization endpoint with the
// request of one sign-in: state, the S256 challenge of verifier, nonce.
func (c *Console) AuthCodeURL(ctx context.Context, state, nonce, verifier string) (string, error) {
	oc, _, err := c.oauth2(ctx)
	if err != nil {
		return "", err
	}
	return oc.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("nonce", nonce)), nil
}

// Exchange redeems the authorization code with verifier at the token
// endpoint and returns the person its ID token names, once the token
// verifies and carries nonce. Claims the ID token lacks (the roles claim,
// a name) are read from the userinfo endpoint when the provider has one.
// Errors: EUNAUTHORIZED when the provider refuses the code or the ID
// token is refused (the reason, see the Err* values, never the token),
// EUNAVAILABLE when the provider cannot be reached.
func (c *Console) Exchange(ctx context.Context, code, verifier, nonce string) (Person, error) {
	oc, meta, err := c.oauth2(ctx)
	if err != nil {
		return Person{}, err
	}
	tok, err := oc.Exchange(context.WithValue(ctx, oauth2.HTTPClient, c.vc.Client), code, oauth2.VerifierOption(verifier))
	if err != nil {
		return Person{}, exchangeError(err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return Person{}, custody.Errorf(custody.EUNAUTHORIZED, "the provider answered without an ID token: may custody's client ask for the openid scope?")
	}
	claims, err := c.verifyIDToken(ctx, raw, nonce)
	if err != nil {
		return Person{}, err
	}
	_, hasRoles := claimAt(claims, c.cfg.RolesClaim)
	if (!hasRoles || displayName(claims) == "") && meta.UserinfoEndpoint != "" {
		if err := c.addUserinfo(ctx, meta.UserinfoEndpoint, tok.AccessToken, claims); err != nil && !hasRoles {
			return Person{}, err
		}
	}
	return Person{Issuer: c.cfg.Issuer, Subject: claimString(claims, "sub"), Name: displayName(claims),
		Roles: claimValues(claims, c.cfg.RolesClaim)}, nil
}

// exchangeError is the custody error of a failed code exchange: the
// provider's error code and description, which hold no token.
func exchangeError(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.ErrorCode != "" {
		msg := "the provider refused the sign-in: " + re.ErrorCode
		if re.ErrorDescription != "" {
			msg += " (" + re.ErrorDescription + ")"
		}
		return &custody.Error{Kind: custody.EUNAUTHORIZED, Message: msg, Err: err}
	}
	return &custody.Error{Kind: custody.EUNAVAILABLE, Message: "the provider's token endpoint did not answer the sign-in", Err: err}
}

// addUserinfo adds to claims what the userinfo endpoint says of the
// same subject and claims lack.
func (c *Console) addUserinfo(ctx context.Context, endpoint, accessToken string, claims map[string]any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+accessToken)
	var info map[string]any
	if err := c.is.doJSON(req, &info); err != nil {
		return &custody.Error{Kind: custody.EUNAVAILABLE,
			Message: fmt.Sprintf("the ID token has no %q claim and the provider's userinfo endpoint did not answer", c.cfg.RolesClaim), Err: err}
	}
	if claimString(info, "sub") != claimString(claims, "sub") {
		return custody.Errorf(custody.EUNAUTHORIZED, "the provider's userinfo names another subject than its ID token")
	}
	for k, v := range info {
		if _, ok := claims[k]; !ok {
			claims[k] = v
		}
	}
	return nil
}

// displayName is how the claims name a person for people to read.
func displayName(claims map[string]any) string {
	return cmp.Or(claimString(claims, "name"), claimString(claims, "preferred_username"), claimString(claims, "email"))
}

// claimValues returns the values of the claim name (see claimAt): a
// string is one value, a list its strings.
func claimValues(claims map[string]any, name string) []string {
	v, _ := claimAt(claims, name)
	switch t := v.(type) {
	case string:
		return []string{t}
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

// claimAt returns the claim name, or, when there is none of that name, the
// value at name as a dotted path into nested objects.
func claimAt(claims map[string]any, name string) (any, bool) {
	if v, ok := claims[name]; ok {
		return v, true
	}
	var cur any = claims
	for part := range strings.SplitSeq(name, ".") {
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = obj[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}
