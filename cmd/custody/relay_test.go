package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody/internal/lockedbuf"
)

// notesServer is an upstream with a tool, two resources (one nobody
// governs) and a prompt, served over streamable HTTP.
func notesServer(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "ping", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil
		})
	for uri, text := range map[string]string{"notes://today": "ship it", "private://diary": "dear diary"} {
		s.AddResource(&mcp.Resource{URI: uri, Name: uri}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: text}}}, nil
		})
	}
	s.AddPrompt(&mcp.Prompt{Name: "brief"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Brief me."}}}}, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	return hs.URL
}

// relayConfig writes a configuration fronting notesServer as upstream n,
// its notes governed by policy.
func relayConfig(t *testing.T, dir string, policy map[string]any) string {
	t.Helper()
	cfg := map[string]any{
		"mcpServers": map[string]any{"n": map[string]any{"url": notesServer(t)}},
		"tools":      map[string]any{"n__ping": map[string]any{"access": "READ", "effect": "NONE"}},
		"resources":  map[string]any{"n+notes://*": policy},
		"prompts":    map[string]any{"n__brief": map[string]any{}},
	}
	raw, _ := json.Marshal(cfg)
	path := filepath.Join(dir, "custody.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestMCPStdioRelaysResourcesAndPrompts runs `custody mcp --stdio` with a
// configuration that governs resources and prompts, and uses them with a
// go-sdk client on its stdin and stdout.
func TestMCPStdioRelaysResourcesAndPrompts(t *testing.T) {
	dir := t.TempDir()
	cfg := relayConfig(t, dir, map[string]any{"access": "READ", "maxBytes": 1024})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr lockedbuf.Buffer
	m := &Main{Stdin: inR, Stdout: outW, Stderr: &stderr, Getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() {
		done <- m.Run(context.Background(), []string{"mcp", "--stdio", "--data", filepath.Join(dir, "data"), "--config", cfg})
		outW.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}

	list, err := cs.ListResources(ctx, nil)
	if err != nil || len(list.Resources) != 1 || list.Resources[0].URI != "n+notes://today" {
		t.Fatalf("resources %+v %v: only the governed one", list, err)
	}
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "n+notes://today"})
	if err != nil || res.Contents[0].Text != "ship it" || res.Meta["custody/receipt"] == nil {
		t.Fatalf("read %+v %v", res, err)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "n+private://diary"}); err == nil || !strings.Contains(err.Error(), "denied") {
		t.Errorf("an ungoverned read: %v", err)
	}
	got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "n__brief"})
	if err != nil || got.Messages[0].Content.(*mcp.TextContent).Text != "Brief me." {
		t.Fatalf("get %+v %v", got, err)
	}
	cs.Close()
	inW.Close()
	if code := <-done; code != exitOK {
		t.Fatalf("custody mcp --stdio exited %d\n%s", code, stderr.String())
	}

	t.Run("LedgerVerifies", func(t *testing.T) {
		code, out, errOut := runMain(t, nil, "", "ledger", "verify", "--data", filepath.Join(dir, "data"))
		if code != exitOK {
			t.Errorf("ledger verify: %d\n%s\n%s", code, out, errOut)
		}
	})
	t.Run("ConfigCheckLists", func(t *testing.T) {
		code, out, errOut := runMain(t, nil, "", "config", "check", cfg)
		for _, want := range []string{"n__brief", "n+notes://today", "n+private://diary", "(no policy: denied)", "2 of 3 prompts and resources exposed"} {
			if !strings.Contains(out, want) {
				t.Errorf("config check does not say %q: %d\n%s\n%s", want, code, out, errOut)
			}
		}
	})
}

// TestServeResourceReadApproved holds a HUMAN_CONFIRMATION read at serve's
// MCP door until an operator approves it through the API: the approval is
// checked against the relay's gateway, and used once.
func TestServeResourceReadApproved(t *testing.T) {
	dir := t.TempDir()
	cfg := relayConfig(t, dir, map[string]any{"approval": "HUMAN_CONFIRMATION"})
	base, _, stop := startServe(t, upstreamEnv(), "--data", filepath.Join(dir, "data"), "--config", cfg)
	defer stop()
	cs := mcpSession(t, base, upAgent)
	ctx := context.Background()
	read := func() (*mcp.ReadResourceResult, error) {
		return cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "n+notes://today"})
	}
	_, err := read()
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		t.Fatalf("a held read: %v", err)
	}
	var data struct {
		Error struct {
			Kind string `json:"kind"`
			ID   string `json:"approval_request_id"`
		} `json:"custody/error"`
	}
	if json.Unmarshal(we.Data, &data); data.Error.Kind != "pending_approval" || data.Error.ID == "" {
		t.Fatalf("a held read: %s", we.Data)
	}
	decide(t, base, data.Error.ID, "approved")
	res, err := read()
	if err != nil || res.Contents[0].Text != "ship it" {
		t.Fatalf("the approved read: %+v %v", res, err)
	}
	if _, err := read(); err == nil {
		t.Error("one approval authorised two reads")
	}
}
