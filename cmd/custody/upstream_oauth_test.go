package main

import (
	"context"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody/internal/idptest"
	"github.com/custody-dev/custody/internal/lockedbuf"
	"github.com/custody-dev/custody/internal/mcptest"
	"github.com/custody-dev/custody/upstream"
)

// custody's client at the provider, for the upstream "docs", and its
// secret, which serve reads from $DOCS_SECRET.
const (
	docsClient = "custody-docs"
	docsSecret = "docs-client-secret-000000001"
)

// oauthUpstream is the mcptest server behind the provider's tokens: it
// serves only a request bearing an active token whose audience is its
// URL. custody is a client of the provider allowed such tokens, which
// last lifetime (the provider's default when zero).
func oauthUpstream(t *testing.T, lifetime time.Duration) (*idptest.OP, *idptest.Protected) {
	t.Helper()
	op := idptest.Start(t, "")
	s := mcptest.Server(mcptest.Options{})
	p := op.Protect(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	op.AddClient(idptest.Client{ID: docsClient, Secret: docsSecret, Audience: []string{p.URL}, Lifetime: lifetime})
	return op, p
}

// oauthConfig writes a configuration fronting p as "docs" with oauth at
// op, plus extra top-level members.
func oauthConfig(t *testing.T, op *idptest.OP, p *idptest.Protected, extra map[string]any) string {
	t.Helper()
	cfg := map[string]any{
		"mcpServers": map[string]any{"docs": map[string]any{"url": p.URL,
			"oauth": map[string]any{"issuer": op.Issuer, "clientId": docsClient, "clientSecret": "${env:DOCS_SECRET}"}}},
		"tools": map[string]any{"docs__echo": map[string]any{"access": "READ", "effect": "NONE"}},
	}
	for k, v := range extra {
		cfg[k] = v
	}
	raw, _ := json.Marshal(cfg)
	path := filepath.Join(t.TempDir(), "custody.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// withEnv returns upstreamEnv with more variables.
func withEnv(more map[string]string) map[string]string {
	env := upstreamEnv()
	for k, v := range more {
		env[k] = v
	}
	return env
}

// onlyCustodysTokens fails the test unless every request p was sent bore
// one of the tokens it admitted, or none, and none bore one of agents'.
func onlyCustodysTokens(t *testing.T, p *idptest.Protected, agents ...string) {
	t.Helper()
	admitted := map[string]bool{}
	for _, tok := range p.Admitted() {
		admitted[tok] = true
	}
	sent := p.Sent()
	if len(sent) == 0 {
		t.Fatal("the upstream was sent nothing")
	}
	for i, auth := range sent {
		if auth == "" {
			continue // custody's discovery of the server's metadata (RFC 9728) carries no token
		}
		for _, a := range agents {
			if strings.Contains(auth, a) {
				t.Fatalf("request %d to the upstream carried the agent's token", i)
			}
		}
		if tok, ok := strings.CutPrefix(auth, "Bearer "); !ok || !admitted[tok] {
			t.Fatalf("request %d to the upstream carried an Authorization that is not a token custody obtained", i)
		}
	}
}

// TestUpstreamOAuth fronts an MCP server that requires a token of the
// team's provider, for agents that sign in with tokens of that same
// provider, valid for the upstream too: custody obtains its own token,
// the upstream sees that one alone, a restart reuses it, and it is in no
// log, no ledger entry and no byte of the database. A plain HTTP tool
// beside, with a key of its own (${env:...}), gets that key, and no
// more of the agent's token than the MCP server does.
func TestUpstreamOAuth(t *testing.T) {
	op, p := oauthUpstream(t, 0)
	// The agent's token would open the upstream if it ever reached it.
	op.AddClient(idptest.Client{ID: "agent-7", Secret: "s7", JWT: true, Audience: []string{idpResource, p.URL}})
	var quoteAuth lockedbuf.Buffer
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		quoteAuth.Write([]byte(r.Header.Get("Authorization") + "\n"))
		w.Write([]byte(`{"price": 12.5}`))
	}))
	defer api.Close()
	object := map[string]any{"type": "object"}
	cfg := oauthConfig(t, op, p, map[string]any{
		"tokens": map[string]any{"operator": []string{"ana:operator-secret-000001"}},
		"auth": map[string]any{"resource": idpResource, "issuers": []any{map[string]any{"issuer": op.Issuer, "audience": idpResource,
			"agentClaim": "sub", "algs": []string{"RS256", "ES256"}}}},
		"httpTools": map[string]any{"quote": map[string]any{"url": api.URL, "headers": map[string]string{"Authorization": "Bearer ${env:QUOTE_KEY}"},
			"input": object, "output": object}},
		"tools": map[string]any{"docs__echo": map[string]any{"access": "READ", "effect": "NONE"}, "quote": map[string]any{"access": "READ", "effect": "NONE"}},
	})
	data := filepath.Join(t.TempDir(), "data")
	env := withEnv(map[string]string{"DOCS_SECRET": docsSecret, "QUOTE_KEY": "quote-key-1"})
	logs := &lockedbuf.Buffer{}
	base, _, stop := startServeLogged(t, logs, env, "--data", data, "--config", cfg)
	agent := op.Token(t, "agent-7")

	ans := callJSON(t, base, agent, `{"tool":"docs__echo","arguments":{"message":"over http"}}`, 200)
	if !strings.Contains(toJSON(ans), "over http") {
		t.Fatalf("the call's answer: %v", ans)
	}
	cs := mcpSession(t, base, agent)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "docs__echo", Arguments: map[string]any{"message": "over mcp"}})
	if err != nil || res.IsError {
		t.Fatalf("tools/call over MCP: %v %+v", err, res)
	}
	cs.Close()
	callJSON(t, base, agent, `{"tool":"quote","arguments":{}}`, 200)
	if got := quoteAuth.String(); got != "Bearer quote-key-1\n" {
		t.Fatalf("the HTTP tool was sent Authorization %q, want its configured key alone", got)
	}
	onlyCustodysTokens(t, p, agent)
	if n := len(p.Admitted()); n != 1 {
		t.Fatalf("the upstream admitted %d tokens, want custody's one", n)
	}
	custodys := p.Admitted()[0]
	stop()

	// A restart reuses the token kept, unexpired.
	base, _, stop = startServeLogged(t, logs, env, "--data", data, "--config", cfg)
	callJSON(t, base, agent, `{"tool":"docs__echo","arguments":{"message":"again"}}`, 200)
	stop()
	if n := len(p.Admitted()); n != 1 {
		t.Fatalf("after a restart the upstream admitted %d tokens, want the kept one", n)
	}
	onlyCustodysTokens(t, p, agent)

	key, err := os.Stat(filepath.Join(data, upstream.TokenKeyFile))
	if err != nil || key.Mode().Perm() != 0o600 {
		t.Fatalf("the token key beside the signing key: %v %v", key, err)
	}
	secrets := map[string]string{"custody's token": custodys, "the client secret": docsSecret, "the agent's token": agent}
	notIn := func(where, text string) {
		t.Helper()
		for what, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s holds %s", where, what)
			}
		}
	}
	notIn("serve's log", logs.String())
	export := filepath.Join(t.TempDir(), "ledger.jsonl")
	if code, _, errOut := cli(t, data, "ledger", "export", "--out", export, "--pubkey-out", filepath.Join(t.TempDir(), "pub")); code != 0 {
		t.Fatalf("ledger export: %s", errOut)
	}
	raw, _ := os.ReadFile(export)
	notIn("the ledger", string(raw))
	filepath.WalkDir(data, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(path)
			notIn(path, string(b))
		}
		return nil
	})
}

// TestUpstreamOAuthRefreshed: custody's tokens last two seconds; as the
// agent keeps calling, custody obtains new ones and every call goes
// through. The test waits for the upstream to have seen a third token.
func TestUpstreamOAuthRefreshed(t *testing.T) {
	op, p := oauthUpstream(t, 2*time.Second)
	cfg := oauthConfig(t, op, p, nil)
	base, _, stop := startServe(t, withEnv(map[string]string{"DOCS_SECRET": docsSecret}), "--data", t.TempDir(), "--config", cfg)
	defer stop()
	eventually(t, "custody to refresh its token twice", func() bool {
		callJSON(t, base, upAgent, `{"tool":"docs__echo","arguments":{"message":"tick"}}`, 200)
		return len(p.Admitted()) >= 3
	})
	onlyCustodysTokens(t, p, upAgent)
}

// TestUpstreamOAuthWrongSecret: with a secret the provider refuses,
// serve starts degraded: the upstream is sent nothing, its tool is
// unavailable, and /healthz names it with the reason, never the secret.
func TestUpstreamOAuthWrongSecret(t *testing.T) {
	op, p := oauthUpstream(t, 0)
	const wrong = "wrong-docs-secret-00000001"
	cfg := oauthConfig(t, op, p, nil)
	logs := &lockedbuf.Buffer{}
	base, _, stop := startServeLogged(t, logs, withEnv(map[string]string{"DOCS_SECRET": wrong}), "--data", t.TempDir(), "--config", cfg)
	defer stop()

	code, health := healthOf(t, base)
	reason := downNames(health)["docs"]
	if code != 200 || health["status"] != "degraded" || !strings.Contains(reason, "no OAuth access token") ||
		!strings.Contains(reason, "invalid_client") || !strings.Contains(reason, "check oauth.clientId and oauth.clientSecret") {
		t.Fatalf("/healthz %d %v: want degraded, naming docs and why", code, health)
	}
	ans := callJSON(t, base, upAgent, `{"tool":"docs__echo","arguments":{"message":"x"}}`, 503)
	if e := errorOf(t, ans); e["kind"] != "unavailable" {
		t.Fatalf("the call: %v, want unavailable", e)
	}
	for where, text := range map[string]string{"/healthz": toJSON(health), "the call's answer": toJSON(ans), "serve's log": logs.String()} {
		if strings.Contains(text, wrong) {
			t.Errorf("%s holds the client secret", where)
		}
	}
	if n := len(p.Sent()); n != 0 {
		t.Fatalf("the upstream was sent %d requests without a token", n)
	}
}
