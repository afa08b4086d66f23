package config

import (
	"slices"
	"strings"
	"testing"
)

// oauthSecret is the client secret of the tests below: no error may
// repeat it.
const oauthSecret = "s3cr3t-of-the-oauth-client"

// oauthDoc is a configuration with one server whose oauth is given by
// members, a JSON object body.
func oauthDoc(server string) string {
	return `{"mcpServers": {"docs": ` + server + `}}`
}

func TestParseOAuth(t *testing.T) {
	doc := oauthDoc(`{"url": "https://mcp.example.com/mcp", "oauth": {"issuer": "https://idp.example.com",
		"clientId": "custody", "clientSecret": "${env:DOCS_SECRET}", "scopes": ["mcp:read", "mcp:write"]}}`)
	f, err := Parse([]byte(doc), env(map[string]string{"DOCS_SECRET": oauthSecret}))
	if err != nil {
		t.Fatal(err)
	}
	o := server(t, f, "docs").OAuth
	if o == nil || o.Issuer != "https://idp.example.com" || o.ClientID != "custody" || o.ClientSecret != oauthSecret ||
		!slices.Equal(o.Scopes, []string{"mcp:read", "mcp:write"}) || o.Resource != "" || o.TokenURL != "" {
		t.Fatalf("oauth = %+v", o)
	}
	plain, err := Parse([]byte(oauthDoc(`{"url": "https://mcp.example.com/mcp", "headers": {"X-Team": "a"}}`)), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if o := server(t, plain, "docs").OAuth; o != nil {
		t.Fatalf("a server without oauth has %+v", o)
	}
}

func TestParseOAuthRefused(t *testing.T) {
	for _, c := range []struct {
		name, server, want string
	}{
		{"ErrCommand", `{"command": "npx", "oauth": {"issuer": "https://idp.example.com", "clientId": "c", "clientSecret": "${env:S}"}}`,
			"/mcpServers/docs/oauth: oauth is for a server at a url"},
		{"ErrAuthorizationHeader", `{"url": "https://m.example.com/mcp", "headers": {"authorization": "Bearer x"},
			"oauth": {"issuer": "https://idp.example.com", "clientId": "c", "clientSecret": "${env:S}"}}`,
			"/mcpServers/docs/headers/authorization: oauth sets the Authorization header"},
		{"ErrPlainHTTP", `{"url": "https://m.example.com/mcp", "oauth": {"issuer": "http://idp.example.com", "clientId": "c", "clientSecret": "${env:S}"}}`,
			"/mcpServers/docs/oauth/issuer: \"http://idp.example.com\": custody sends its client secret there, so it must be https"},
		{"ErrPlainHTTPTokenURL", `{"url": "https://m.example.com/mcp", "oauth": {"tokenUrl": "http://idp.example.com/token", "clientId": "c", "clientSecret": "${env:S}"}}`,
			"/mcpServers/docs/oauth/tokenUrl:"},
		{"ErrNoIssuer", `{"url": "https://m.example.com/mcp", "oauth": {"clientId": "c", "clientSecret": "${env:S}"}}`,
			"/mcpServers/docs/oauth"},
		{"ErrNoClientID", `{"url": "https://m.example.com/mcp", "oauth": {"issuer": "https://idp.example.com", "clientSecret": "${env:S}"}}`,
			"clientId"},
		{"ErrUnknownMember", `{"url": "https://m.example.com/mcp", "oauth": {"issuer": "https://idp.example.com", "clientId": "c", "clientSecret": "${env:S}", "flow": "x"}}`,
			"/mcpServers/docs/oauth"},
		{"ErrGrant", `{"url": "https://m.example.com/mcp", "oauth": {"issuer": "https://idp.example.com", "clientId": "c", "clientSecret": "${env:S}", "grant": "password"}}`,
			"/mcpServers/docs/oauth/grant: value must be one of"},
		{"ErrCodeTokenURL", `{"url": "https://m.example.com/mcp", "oauth": {"grant": "authorization_code", "tokenUrl": "https://idp.example.com/token"}}`,
			"/mcpServers/docs/oauth/tokenUrl: the authorization code grant reads both its endpoints"},
		{"ErrCodeSecretAlone", `{"url": "https://m.example.com/mcp", "oauth": {"grant": "authorization_code", "clientSecret": "${env:S}"}}`,
			"/mcpServers/docs/oauth/clientSecret: give clientId with it"},
		{"ErrScope", `{"url": "https://m.example.com/mcp", "oauth": {"issuer": "https://idp.example.com", "clientId": "c", "clientSecret": "${env:S}", "scopes": ["read write"]}}`,
			"/mcpServers/docs/oauth/scopes/0: \"read write\" is not one scope"},
		{"ErrResourceFragment", `{"url": "https://m.example.com/mcp", "oauth": {"issuer": "https://idp.example.com", "clientId": "c", "clientSecret": "${env:S}", "resource": "https://m.example.com/mcp#x"}}`,
			"/mcpServers/docs/oauth/resource:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(oauthDoc(c.server)), env(map[string]string{"S": oauthSecret}))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Parse: %v, want an error with %q", err, c.want)
			}
			if strings.Contains(err.Error(), oauthSecret) {
				t.Fatalf("the error repeats the client secret: %v", err)
			}
		})
	}
}

// TestParseOAuthCode: the authorization code grant needs nothing but
// itself: the provider and the client are found and registered.
func TestParseOAuthCode(t *testing.T) {
	f, err := Parse([]byte(oauthDoc(`{"url": "https://notes.example.com/mcp", "oauth": {"grant": "authorization_code", "scopes": ["notes:read"]}}`)), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	o := f.MCPServers["docs"].OAuth.upstream()
	if o.Grant != "authorization_code" || o.ClientID != "" || len(o.Scopes) != 1 {
		t.Fatalf("oauth = %+v", o)
	}
}

// TestParseOAuthLoopback: http is fine for an authorization server on
// this machine, as in tests and sidecars.
func TestParseOAuthLoopback(t *testing.T) {
	for _, issuer := range []string{"http://127.0.0.1:9000", "http://localhost:9000/realms/a", "http://[::1]:9000"} {
		doc := oauthDoc(`{"url": "http://127.0.0.1:8000/mcp", "oauth": {"issuer": "` + issuer + `", "clientId": "c", "clientSecret": "x"}}`)
		if _, err := Parse([]byte(doc), env(nil)); err != nil {
			t.Errorf("issuer %s: %v", issuer, err)
		}
	}
}
