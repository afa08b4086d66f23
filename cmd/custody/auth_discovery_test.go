package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/custody-dev/custody/internal/idptest"
)

// specClient is an MCP client's authorization as the MCP authorization
// specification lays it out, step by step, from nothing but custody's
// URL and a client registered at the team's IdP: a 401's
// WWW-Authenticate names the protected resource metadata (RFC 9728),
// which names the authorization server, whose metadata (RFC 8414 or
// OpenID Connect discovery) names the token endpoint, where a client
// credentials grant for the resource (RFC 8707) gets the token.
type specClient struct {
	id, secret string
	ts         oauth2.TokenSource
	// steps are what it did, for the test to check.
	steps []string
	token string
}

var _ auth.OAuthHandler = (*specClient)(nil)

func (c *specClient) TokenSource(context.Context) (oauth2.TokenSource, error) { return c.ts, nil }

func (c *specClient) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	resp.Body.Close()
	c.steps = append(c.steps, fmt.Sprintf("%d with token %t", resp.StatusCode, req.Header.Get("Authorization") != ""))
	challenges, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return err
	}
	var metadataURL string
	for _, ch := range challenges {
		if ch.Scheme == "bearer" {
			metadataURL = ch.Params["resource_metadata"]
		}
	}
	if metadataURL == "" {
		return errors.New("the 401 names no resource_metadata")
	}
	c.steps = append(c.steps, "resource_metadata "+metadataURL)
	prm, err := oauthex.GetProtectedResourceMetadata(ctx, metadataURL, req.URL.String(), http.DefaultClient)
	if err != nil {
		return err
	}
	if len(prm.AuthorizationServers) == 0 {
		return errors.New("no authorization server")
	}
	c.steps = append(c.steps, "authorization server "+prm.AuthorizationServers[0])
	asm, err := auth.GetAuthServerMetadata(ctx, prm.AuthorizationServers[0], http.DefaultClient)
	if err != nil || asm == nil {
		return fmt.Errorf("authorization server metadata: %v", err)
	}
	c.steps = append(c.steps, "token endpoint "+asm.TokenEndpoint)
	cc := clientcredentials.Config{ClientID: c.id, ClientSecret: c.secret, TokenURL: asm.TokenEndpoint,
		Scopes: prm.ScopesSupported, EndpointParams: url.Values{"resource": {prm.Resource}}}
	tok, err := cc.Token(ctx)
	if err != nil {
		return err
	}
	c.steps = append(c.steps, "token for "+prm.Resource)
	c.token, c.ts = tok.AccessToken, oauth2.StaticTokenSource(tok)
	return nil
}

func TestMCPAuthDiscovery(t *testing.T) {
	idp := idptest.Start(t, "")
	addr := freeAddr(t)
	base := "http://" + addr
	// The client may have tokens for custody's MCP endpoint and for
	// another resource: what it gets depends on the resource it asks for.
	idp.AddClient(idptest.Client{ID: "agent-mcp", Secret: "agent-mcp-secret", JWT: true, Audience: []string{"https://elsewhere.example.com", base + "/mcp"}})
	cfg := filepath.Join(t.TempDir(), "custody.json")
	os.WriteFile(cfg, []byte(`{"auth": {"resource": "`+base+`", "issuers": [{"issuer": "`+idp.Issuer+`"}]}}`), 0o600)
	data := t.TempDir()
	_, _, stop := startServe(t, nil, "--data", data, "--config", cfg, "--addr", addr)
	t.Cleanup(func() { stop() })

	c := &specClient{id: "agent-mcp", secret: "agent-mcp-secret"}
	ctx := context.Background()
	session, err := mcp.NewClient(&mcp.Implementation{Name: "spec-client", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", OAuthHandler: c}, nil)
	if err != nil {
		t.Fatalf("connect: %v (steps %q)", err, c.steps)
	}
	defer session.Close()
	want := []string{"401 with token false", "resource_metadata " + base + "/.well-known/oauth-protected-resource/mcp",
		"authorization server " + idp.Issuer, "token endpoint " + idp.URL + "/oauth/token", "token for " + base + "/mcp"}
	if !slices.Equal(c.steps, want) {
		t.Errorf("steps:\n%q\nwant\n%q", c.steps, want)
	}
	if aud := audience(t, c.token); !slices.Equal(aud, []string{base + "/mcp"}) {
		t.Errorf("the token's audience is %q, want the resource asked for (RFC 8707)", aud)
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "get_time", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("get_time: %v %+v", err, res)
	}
	code, ledger := fetch(t, base+"/v1/ledger", readToken(t, filepath.Join(data, operatorTokenFile)))
	if code != 200 || !strings.Contains(ledger, `"actor":"`+idp.Issuer+`#agent-mcp"`) || strings.Contains(ledger, c.token) {
		t.Errorf("the ledger (%d) should name the agent as issuer#subject and hold no token", code)
	}
}

// audience returns the aud of a JWT, unverified.
func audience(t *testing.T, tok string) []string {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %d parts", len(parts))
	}
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var claims struct {
		Aud any `json:"aud"`
	}
	json.Unmarshal(payload, &claims)
	switch a := claims.Aud.(type) {
	case string:
		return []string{a}
	case []any:
		var out []string
		for _, s := range a {
			out = append(out, fmt.Sprint(s))
		}
		return out
	}
	return nil
}
