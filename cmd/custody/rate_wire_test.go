package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRateLimitOnTheWire: a call over its tool's rate is refused on both
// doors with when to retry: Retry-After over HTTP, retry_after in the
// MCP error's data; the first call of the window runs.
func TestRateLimitOnTheWire(t *testing.T) {
	dir := t.TempDir()
	raw, _ := json.Marshal(map[string]any{
		"mcpServers": map[string]any{"n": map[string]any{"url": notesServer(t)}},
		"tools": map[string]any{"n__ping": map[string]any{"access": "READ", "effect": "NONE",
			"rate": map[string]any{"per": "agent", "calls": 1, "every": "1h"}}},
	})
	cfg := filepath.Join(dir, "custody.json")
	if err := os.WriteFile(cfg, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	base, _, stop := startServe(t, upstreamEnv(), "--data", filepath.Join(dir, "data"), "--config", cfg)
	defer stop()

	callJSON(t, base, upAgent, `{"tool":"n__ping","arguments":{}}`, http.StatusOK)
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/calls", strings.NewReader(`{"tool":"n__ping","arguments":{}}`))
	req.Header.Set("Authorization", "Bearer "+upAgent)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	secs, err := strconv.Atoi(res.Header.Get("Retry-After"))
	if res.StatusCode != http.StatusForbidden || err != nil || secs <= 0 || secs > 3600 {
		t.Errorf("a call over the rate: %d, Retry-After %q", res.StatusCode, res.Header.Get("Retry-After"))
	}

	// The MCP door: another agent has its own window; its second call is
	// refused with the retry in the error's data.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hc := &http.Client{Transport: bearerRT{token: upAgent2}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for i, wantErr := range []bool{false, true} {
		out, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "n__ping", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		detail, _ := out.Meta["custody/error"].(map[string]any)
		retry, _ := detail["retry_after"].(float64)
		switch {
		case !wantErr && out.IsError:
			t.Errorf("call %d refused: %v", i, detail)
		case wantErr && (!out.IsError || detail["kind"] != "denied" || retry <= 0):
			t.Errorf("call %d over the rate: error %v, detail %v", i, out.IsError, detail)
		}
	}
}

// bearerRT adds a bearer token to every request.
type bearerRT struct{ token string }

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}
