package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeMCPConfig checks that serve applies the config file's "mcp"
// section and token roles to /mcp: the allowed origin passes and another
// is refused, an operator token is denied, the session cap evicts, and an
// idle session closes. The idle timeout runs on the wall clock here, so
// the test asserts only what holds at any speed; mcpserver's own test
// moves a fake clock through the timeout.
func TestServeMCPConfig(t *testing.T) {
	const idle = 700 * time.Millisecond
	cfg := filepath.Join(t.TempDir(), "custody.json")
	os.WriteFile(cfg, []byte(`{"tokens":{"agent":["bot:agent-secret-0000000001"],"operator":["ana:operator-secret-000001"]},
		"mcp":{"sessionIdleTimeout":"`+idle.String()+`","maxSessionsPerAgent":1,"allowedOrigins":["https://app.example.com"]}}`), 0o600)
	base, _, stop := startServe(t, nil, "--data", t.TempDir(), "--config", cfg)
	defer stop()
	const agent, operator = "agent-secret-0000000001", "operator-secret-000001"
	const initialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	mcpPost := func(token, session, origin, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	if res := mcpPost(operator, "", "", initialize); res.StatusCode != http.StatusForbidden {
		t.Errorf("operator token: status %d, want 403", res.StatusCode)
	}
	if res := mcpPost(agent, "", "https://evil.example", initialize); res.StatusCode != http.StatusForbidden {
		t.Errorf("another origin: status %d, want 403", res.StatusCode)
	}
	first := mcpPost(agent, "", "https://app.example.com", initialize)
	if first.StatusCode != http.StatusOK {
		t.Fatalf("the allowed origin: status %d", first.StatusCode)
	}
	opened := time.Now()
	second := mcpPost(agent, "", "", initialize)
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	if res := mcpPost(agent, first.Header.Get("Mcp-Session-Id"), "", ping); res.StatusCode != http.StatusNotFound {
		t.Errorf("the session beyond a cap of 1 evicted none: ping status %d", res.StatusCode)
	}
	// The newest session's timer started after opened: answered within
	// the timeout of it, its ping cannot have met the timeout, so a 404
	// is the cap's doing. A machine slower than that proves nothing here.
	res := mcpPost(agent, second.Header.Get("Mcp-Session-Id"), "", ping)
	if res.StatusCode != http.StatusOK && time.Since(opened) < idle {
		t.Fatalf("the newest session: ping status %d", res.StatusCode)
	}
	// Idle for longer than its timeout, the session closes. Each ping
	// that finds it open starts its idle time again: on a machine whose
	// timer came late, the next gap is another chance.
	for deadline := time.Now().Add(20 * time.Second); res.StatusCode != http.StatusNotFound; {
		if time.Now().After(deadline) {
			t.Fatalf("an idle session outlived its timeout: ping status %d", res.StatusCode)
		}
		time.Sleep(2 * idle)
		res = mcpPost(agent, second.Header.Get("Mcp-Session-Id"), "", ping)
	}
}
