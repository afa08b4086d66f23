package main

import (
	"encoding/base64"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/custody-dev/custody/internal/idptest"
)

const idpResource = "https://custody.example.com"

// startIdentityServe runs a real OpenID provider and custody serve
// trusting it, with an agents policy by group, and returns both.
func startIdentityServe(t *testing.T) (*idptest.OP, string) {
	t.Helper()
	idp := idptest.Start(t, "")
	idp.AddClient(idptest.Client{ID: "agent-42", Secret: "s42", JWT: true, Audience: []string{idpResource}, Groups: []string{"sre"}})
	idp.AddClient(idptest.Client{ID: "agent-ops", Secret: "sops", JWT: true, Audience: []string{idpResource}, Groups: []string{"ops"}})
	idp.AddClient(idptest.Client{ID: "agent-opaque", Secret: "so", Audience: []string{idpResource}})
	idp.AddClient(idptest.Client{ID: "agent-elsewhere", Secret: "se", JWT: true, Audience: []string{"https://other.example.com"}})
	cfg := filepath.Join(t.TempDir(), "custody.json")
	os.WriteFile(cfg, []byte(`{"tokens":{"operator":["ana:operator-secret-000001"]},
		"auth": {"resource": "`+idpResource+`", "issuers": [{"issuer": "`+idp.Issuer+`", "audience": "`+idpResource+`",
			"agentClaim": "sub", "groupsClaim": "groups", "algs": ["RS256","ES256"],
			"introspection": {"clientId": "`+idptest.IntrospectorID+`", "clientSecret": "${env:IDP_SECRET}"}}]},
		"agents": {"group:ops": {"tools": ["get_time"]}}}`), 0o600)
	base, _, stop := startServe(t, map[string]string{"IDP_SECRET": idptest.IntrospectorSecret}, "--data", t.TempDir(), "--config", cfg)
	t.Cleanup(func() { stop() })
	return idp, base
}

// mcpWith posts one JSON-RPC message to /mcp with token.
func mcpWith(t *testing.T, base, token, session, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

const idpInitialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// mcpCall opens a session with token and calls tool in it.
func mcpCall(t *testing.T, base, token, tool string) string {
	t.Helper()
	res, body := mcpWith(t, base, token, "", idpInitialize)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("initialize: %d %s", res.StatusCode, body)
	}
	session := res.Header.Get("Mcp-Session-Id")
	mcpWith(t, base, token, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	_, body = mcpWith(t, base, token, session, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`","arguments":{}}}`)
	return body
}

func TestServeIdentityAccepts(t *testing.T) {
	idp, base := startIdentityServe(t)
	jwt := idp.Token(t, "agent-42")
	if body := mcpCall(t, base, jwt, "get_time"); !strings.Contains(body, `"result"`) || strings.Contains(body, `"isError":true`) {
		t.Errorf("/mcp tools/call with the IdP's JWT: %s", body)
	}
	post(t, base+"/v1/calls", jwt, `{"tool":"get_time","arguments":{}}`, 200)
	opaque := idp.Token(t, "agent-opaque")
	post(t, base+"/v1/calls", opaque, `{"tool":"get_time","arguments":{}}`, 200)
	revoked := idp.Token(t, "agent-opaque")
	idp.Revoke(t, "agent-opaque", revoked)
	if b := post(t, base+"/v1/calls", revoked, `{"tool":"get_time","arguments":{}}`, 401); !strings.Contains(b, "not active") {
		t.Errorf("revoked opaque token: %s", b)
	}
	code, ledger := fetch(t, base+"/v1/ledger", "operator-secret-000001")
	for _, actor := range []string{idp.Issuer + "#agent-42", idp.Issuer + "#agent-opaque"} {
		if code != 200 || !strings.Contains(ledger, `"actor":"`+actor+`"`) {
			t.Errorf("the ledger (%d) does not name %s", code, actor)
		}
	}
	for _, tok := range []string{jwt, opaque} {
		if strings.Contains(ledger, tok) {
			t.Error("the ledger holds a token")
		}
	}
	if prm := get(t, base+"/.well-known/oauth-protected-resource/mcp"); !strings.Contains(prm, `"authorization_servers":["`+idp.Issuer+`"]`) ||
		!strings.Contains(prm, `"resource":"`+idpResource+`/mcp"`) {
		t.Errorf("protected resource metadata: %s", prm)
	}
	if prm := get(t, base+"/.well-known/oauth-protected-resource"); !strings.Contains(prm, `"resource":"`+idpResource+`"`) {
		t.Errorf("protected resource metadata: %s", prm)
	}
}

func TestServeIdentityRefuses(t *testing.T) {
	idp, base := startIdentityServe(t)
	other := idptest.Start(t, "")
	impostor := idptest.Start(t, idp.Issuer)
	for _, o := range []*idptest.OP{other, impostor} {
		o.AddClient(idptest.Client{ID: "agent-42", Secret: "s42", JWT: true, Audience: []string{idpResource}})
	}
	good := idp.Token(t, "agent-42")
	parts := strings.Split(good, ".")
	tests := []struct{ name, token, reason string }{
		{"WrongAudience", idp.Token(t, "agent-elsewhere"), "wrong audience"},
		{"UnknownIssuer", other.Token(t, "agent-42"), "issuer is not one custody trusts"},
		{"AlgNone", base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + "." + parts[1] + ".", "algorithm is not allowed"},
		{"OtherKey", impostor.Token(t, "agent-42"), "signature does not verify"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, body := mcpWith(t, base, tt.token, "", idpInitialize)
			challenge := res.Header.Get("WWW-Authenticate")
			if res.StatusCode != 401 || !strings.Contains(body, tt.reason) || strings.Contains(body, tt.token) {
				t.Errorf("/mcp: %d %s, want 401 saying %q", res.StatusCode, body, tt.reason)
			}
			if want := `Bearer resource_metadata="` + idpResource + `/.well-known/oauth-protected-resource/mcp", error="invalid_token"`; !strings.HasPrefix(challenge, want) {
				t.Errorf("/mcp WWW-Authenticate %q, want %s...", challenge, want)
			}
			req, _ := http.NewRequest(http.MethodGet, base+"/v1/tools", nil)
			req.Header.Set("Authorization", "Bearer "+tt.token)
			r, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			r.Body.Close()
			if r.StatusCode != 401 || !strings.Contains(r.Header.Get("WWW-Authenticate"), `resource_metadata="`+idpResource+`/.well-known/oauth-protected-resource"`) {
				t.Errorf("/v1/tools: %d %q", r.StatusCode, r.Header.Get("WWW-Authenticate"))
			}
		})
	}
	res, _ := mcpWith(t, base, "", "", idpInitialize)
	if c := res.Header.Get("WWW-Authenticate"); res.StatusCode != 401 || strings.Contains(c, "error=") || !strings.Contains(c, "resource_metadata=") {
		t.Errorf("no token: %d %q, want 401 with resource_metadata and no error", res.StatusCode, c)
	}
}

func TestServeIdentityGroupPolicy(t *testing.T) {
	idp, base := startIdentityServe(t)
	ops, sre := idp.Token(t, "agent-ops"), idp.Token(t, "agent-42")
	tools := func(token string) string {
		req, _ := http.NewRequest(http.MethodGet, base+"/v1/tools", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	if got := tools(ops); !strings.Contains(got, `"get_time"`) || strings.Contains(got, `"write_note"`) {
		t.Errorf("the ops group's agent sees %s, want get_time only", got)
	}
	if got := tools(sre); !strings.Contains(got, `"write_note"`) {
		t.Errorf("an agent of no listed group sees %s, want every tool", got)
	}
	if body := mcpCall(t, base, ops, "write_note"); !strings.Contains(body, "denied") && !strings.Contains(body, "not") {
		t.Errorf("the ops agent called write_note: %s", body)
	}
}

func TestConfigCheckAuth(t *testing.T) {
	idp := idptest.Start(t, "")
	impostor := idptest.Start(t, "https://idp.example.com") // its discovery document names another issuer
	down := "http://" + freeAddr(t)                         // nobody answers there
	write := func(auth string) string {
		cfg := filepath.Join(t.TempDir(), "custody.json")
		os.WriteFile(cfg, []byte(`{"console_url": "https://console.example.com/", "auth": `+auth+`}`), 0o600)
		return cfg
	}
	good := write(`{"resource": "` + idpResource + `", "issuers": [{"issuer": "` + idp.Issuer + `", "groupsClaim": "groups",
		"introspection": {"clientId": "custody", "clientSecret": "${env:IDP_SECRET}"}}],
		"console": {"issuer": "` + idp.Issuer + `", "clientId": "custody-console", "clientSecret": "${env:CONSOLE_SECRET}",
			"operators": ["ops"], "auditors": ["audit"]}}`)
	env := map[string]string{"IDP_SECRET": "introspection-secret-value", "CONSOLE_SECRET": "console-secret-value"}
	code, out, stderr := runMain(t, env, "", "config", "check", good)
	out = regexp.MustCompile(` {2,}`).ReplaceAllString(out, " ") // the table's columns
	if code != exitOK {
		t.Fatalf("config check: %d\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{
		"resource " + idpResource,
		idpResource + "/.well-known/oauth-protected-resource/mcp",
		"issuer " + idp.Issuer,
		"reached " + idp.Issuer + "/.well-known/openid-configuration",
		"checked with the keys at " + idp.Issuer + "/keys",
		"introspected at " + idp.Issuer + "/oauth/introspect as client custody",
		"groups from claim groups",
		"operators and auditors sign in at " + idp.Issuer,
		"https://console.example.com/login/oidc/callback (from console_url): register it at the provider for client custody-console",
		"custody-console, authenticating as client_secret_basic",
		"authorization code with PKCE (S256) and a nonce at " + idp.Issuer + "/authorize; code redeemed at " + idp.Issuer + "/oauth/token",
		"scopes openid profile email",
		`from claim "groups": operator for ops; auditor for audit; anyone else is refused`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("config check does not say %q:\n%s", want, out)
		}
	}
	for _, secret := range env {
		if strings.Contains(out+stderr, secret) {
			t.Errorf("config check shows a secret:\n%s", out)
		}
	}

	t.Run("Unreachable", func(t *testing.T) {
		cfg := write(`{"resource": "` + idpResource + `", "issuers": [{"issuer": "` + down + `"}],
			"console": {"issuer": "` + down + `", "clientId": "c", "operators": ["ops"]}}`)
		code, out, stderr := runMain(t, nil, "", "config", "check", cfg)
		if code != exitOK || strings.Count(out, "NOT REACHED") != 2 || !strings.Contains(out, "connection refused") {
			t.Errorf("an issuer that is down: %d, want it said twice and no failure:\n%s\n%s", code, out, stderr)
		}
	})
	t.Run("OtherIssuer", func(t *testing.T) {
		cfg := write(`{"resource": "` + idpResource + `", "issuers": [{"issuer": "` + impostor.URL + `"}]}`)
		code, out, stderr := runMain(t, nil, "", "config", "check", cfg)
		if code == exitOK || !strings.Contains(stderr, `names the issuer "https://idp.example.com"`) || !strings.Contains(out, "PROBLEM") {
			t.Errorf("a discovery document naming another issuer: %d\n%s\n%s", code, out, stderr)
		}
	})
	t.Run("BothRoles", func(t *testing.T) {
		cfg := write(`{"resource": "` + idpResource + `", "issuers": [{"issuer": "` + idp.Issuer + `"}],
			"console": {"issuer": "` + idp.Issuer + `", "clientId": "c", "operators": ["ops"], "auditors": ["ops"]}}`)
		if code, _, stderr := runMain(t, nil, "", "config", "check", cfg); code == exitOK || !strings.Contains(stderr, `"ops" is in both operators and auditors`) {
			t.Errorf("a value in both roles: %d %s", code, stderr)
		}
	})
}
