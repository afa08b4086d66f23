package idptest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// App is a client people authorize by the authorization code grant with
// PKCE, as custody is of an upstream MCP server's provider: its access
// tokens are opaque (introspected), last Lifetime (5 minutes when zero),
// and name as their audience the RFC 8707 resource the request named,
// which must be one of Audience; with offline_access it gets refresh
// tokens. A Secret makes it confidential; without, it is public and PKCE
// is its proof.
type App struct {
	ID, Secret   string
	RedirectURIs []string
	Audience     []string
	Lifetime     time.Duration
}

// registerPath is the provider's RFC 7591 registration endpoint, served
// once OfferRegistration has run.
const registerPath = "/register"

// AddApp registers a.
func (o *OP) AddApp(a App) {
	o.st.mu.Lock()
	defer o.st.mu.Unlock()
	o.st.apps[a.ID] = &appClient{Client: storage.WebClient(a.ID, a.Secret, a.RedirectURIs...), c: a}
}

// OfferRegistration has the provider register clients that ask (RFC 7591
// dynamic client registration), naming its registration endpoint in its
// metadata: each becomes an App with the Audience and Lifetime of like.
func (o *OP) OfferRegistration(like App) {
	o.st.mu.Lock()
	defer o.st.mu.Unlock()
	o.st.registration = &like
}

// Registered returns the ids of the clients registered so far.
func (o *OP) Registered() []string {
	o.st.mu.Lock()
	defer o.st.mu.Unlock()
	return slices.Clone(o.st.registered)
}

// SignOut ends every authorization of user at client: its access and
// refresh tokens are no longer honoured.
func (o *OP) SignOut(t testing.TB, user, client string) {
	t.Helper()
	if err := o.st.Storage.TerminateSession(context.Background(), user, client); err != nil {
		t.Fatal(err)
	}
	o.st.mu.Lock()
	defer o.st.mu.Unlock()
	for id, tok := range o.st.tokens {
		if tok.clientID == client && tok.subject == user {
			delete(o.st.tokens, id)
		}
	}
}

// appClient is an App as the OP sees it.
type appClient struct {
	*storage.Client
	c App
}

func (a *appClient) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeCode, oidc.GrantTypeRefreshToken}
}

func (a *appClient) AuthMethod() oidc.AuthMethod {
	if a.c.Secret == "" {
		return oidc.AuthMethodNone
	}
	return oidc.AuthMethodBasic
}

func (a *appClient) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}

func (s *store) app(id string) *appClient {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.apps[id]
}

// applicationOf is the client a code or refresh token request is of.
func applicationOf(req op.TokenRequest) string {
	switch r := req.(type) {
	case *storage.AuthRequest:
		return r.ApplicationID
	case *storage.RefreshTokenRequest:
		return r.ApplicationID
	}
	return ""
}

// CreateAccessAndRefreshTokens is the example's, and for an App keeps the
// access token, with its audience the request's resources, for
// introspection.
func (s *store) CreateAccessAndRefreshTokens(ctx context.Context, req op.TokenRequest, current string) (string, string, time.Time, error) {
	a := s.app(applicationOf(req))
	aud := req.GetAudience()
	if res, _ := ctx.Value(resourceKey{}).([]string); a != nil && len(res) > 0 {
		for _, r := range res {
			if !slices.Contains(a.c.Audience, r) {
				return "", "", time.Time{}, oidc.ErrInvalidTarget().WithDescription("the client may not have tokens for %s", r)
			}
		}
		aud = res
	}
	id, refresh, exp, err := s.Storage.CreateAccessAndRefreshTokens(ctx, req, current)
	if err != nil || a == nil {
		return id, refresh, exp, err
	}
	exp = time.Now().Add(cmp.Or(a.c.Lifetime, lifetime))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[id] = &token{clientID: a.c.ID, subject: req.GetSubject(), exp: exp, scopes: req.GetScopes(), audience: aud}
	return id, refresh, exp, nil
}

// withRegistration names the registration endpoint in the provider's
// discovery document once registration is offered.
func (o *OP) withRegistration(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.st.mu.Lock()
		offered := o.st.registration != nil
		o.st.mu.Unlock()
		if !offered || r.URL.Path != oidc.DiscoveryEndpoint {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		var doc map[string]any
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &doc) != nil {
			w.WriteHeader(rec.Code)
			w.Write(rec.Body.Bytes())
			return
		}
		doc["registration_endpoint"] = o.URL + registerPath
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(doc)
	})
}

// handleRegister serves RFC 7591 registration: a public client (auth
// method none) or a confidential one, for the redirect URIs it names.
func (o *OP) handleRegister(w http.ResponseWriter, r *http.Request) {
	o.st.mu.Lock()
	like := o.st.registration
	o.st.mu.Unlock()
	if like == nil {
		http.NotFound(w, r)
		return
	}
	var req struct {
		RedirectURIs []string `json:"redirect_uris"`
		AuthMethod   string   `json:"token_endpoint_auth_method"`
		GrantTypes   []string `json:"grant_types"`
	}
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(&req); err != nil || len(req.RedirectURIs) == 0 {
		writeRegistrationError(w, "invalid_client_metadata", "redirect_uris are required")
		return
	}
	for _, u := range req.RedirectURIs {
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			writeRegistrationError(w, "invalid_redirect_uri", "not an http(s) URL: "+u)
			return
		}
	}
	a := App{ID: "dcr-" + uuid.NewString(), RedirectURIs: req.RedirectURIs, Audience: like.Audience, Lifetime: like.Lifetime}
	method := cmp.Or(req.AuthMethod, "client_secret_basic")
	if method != "none" {
		a.Secret, method = uuid.NewString(), "client_secret_basic"
	}
	o.AddApp(a)
	o.st.mu.Lock()
	o.st.registered = append(o.st.registered, a.ID)
	o.st.mu.Unlock()
	reply := map[string]any{"client_id": a.ID, "client_id_issued_at": time.Now().Unix(), "redirect_uris": a.RedirectURIs,
		"token_endpoint_auth_method": method, "grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"}}
	if a.Secret != "" {
		reply["client_secret"], reply["client_secret_expires_at"] = a.Secret, 0
	}
	var b bytes.Buffer
	json.NewEncoder(&b).Encode(reply)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	w.Write(b.Bytes())
}

func writeRegistrationError(w http.ResponseWriter, code, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
}
