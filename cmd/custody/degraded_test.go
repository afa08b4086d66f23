package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody/internal/mcptest"
)

// degradedConfig writes a configuration of three upstreams: t, the
// mcptest server; d, a command that does not exist yet (at later); and
// late, a streamable HTTP server at url that nobody serves yet.
func degradedConfig(t *testing.T, dir, later, url string, extra map[string]any) string {
	t.Helper()
	read := map[string]any{"access": "READ", "effect": "NONE"}
	cfg := map[string]any{
		"mcpServers": map[string]any{
			"t":    map[string]any{"command": os.Args[0], "env": map[string]string{mcptest.EnvServe: "1"}},
			"d":    map[string]any{"command": later, "env": map[string]string{mcptest.EnvServe: "1"}},
			"late": map[string]any{"url": url},
		},
		"tools": map[string]any{"t__echo": read, "d__echo": read, "late__*": read},
	}
	for k, v := range extra {
		cfg[k] = v
	}
	raw, _ := json.Marshal(cfg)
	path := filepath.Join(dir, "custody.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// serveLate starts, on addr, a streamable HTTP MCP server with one tool,
// shout.
func serveLate(t *testing.T, addr string) {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "late", Version: "1"}, nil)
	type in struct {
		Message string `json:"message"`
	}
	type out struct {
		Shout string `json:"shout"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "shout", Description: "Say it louder."},
		func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, out, error) {
			return nil, out{Shout: strings.ToUpper(a.Message)}, nil
		})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on the address serve was given: %v", err)
	}
	srv := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

// healthOf returns /healthz's status code and body.
func healthOf(t *testing.T, base string) (int, map[string]any) {
	t.Helper()
	res, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, body
}

// downNames returns the names /healthz says are down.
func downNames(body map[string]any) map[string]string {
	out := map[string]string{}
	list, _ := body["upstreams_down"].([]any)
	for _, u := range list {
		m, _ := u.(map[string]any)
		name, _ := m["name"].(string)
		msg, _ := m["error"].(string)
		out[name] = msg
	}
	return out
}

// eventually waits, with a generous deadline, until cond holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestServeWithAnUpstreamDown: serve starts with two of its three
// upstreams down, serves the one that is up, refuses and records calls
// of a down one as unavailable, says degraded, and serves each down
// server's tools once it comes up.
func TestServeWithAnUpstreamDown(t *testing.T) {
	dir := t.TempDir()
	later, addr := filepath.Join(dir, "later-server"), freeAddr(t)
	cfg := degradedConfig(t, dir, later, "http://"+addr+"/mcp", nil)
	base, _, stop := startServe(t, upstreamEnv(), "--data", filepath.Join(dir, "data"), "--config", cfg)
	defer stop()

	t.Run("UpServerServes", func(t *testing.T) {
		callJSON(t, base, upAgent, `{"tool":"t__echo","arguments":{"message":"hi"}}`, 200)
	})
	t.Run("DownToolIsUnavailableAndRecorded", func(t *testing.T) {
		ans := callJSON(t, base, upAgent, `{"tool":"d__echo","arguments":{"message":"hi"}}`, 503)
		if e := errorOf(t, ans); e["kind"] != "unavailable" || strings.Contains(toJSON(e), later) {
			t.Errorf("error %v: want unavailable, without the server's command", e)
		}
		if body := getBody(t, base+"/v1/ledger?kind=call.refused", upOperator); !strings.Contains(body, `"d__echo"`) {
			t.Errorf("no call.refused entry of d__echo: %s", body)
		}
	})
	t.Run("NoExampleTools", func(t *testing.T) {
		if body := getBody(t, base+"/v1/tools", upAgent); strings.Contains(body, "get_time") {
			t.Errorf("a configuration with upstreams serves the example tools: %s", body)
		}
	})
	t.Run("HealthIsDegraded", func(t *testing.T) {
		code, body := healthOf(t, base)
		down := downNames(body)
		if code != 200 || body["status"] != "degraded" || down["d"] == "" || down["late"] == "" || down["t"] != "" {
			t.Errorf("/healthz %d %v: want 200, degraded, naming d and late with their errors", code, body)
		}
	})

	// A session opened before the server comes up stays open: it is told
	// the tool list changed, and lists and calls the new tool, in its
	// trace.
	changed := make(chan struct{}, 16)
	early := mcpSessionWith(t, base, upAgent, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	before, err := early.CallTool(context.Background(), &mcp.CallToolParams{Name: "t__echo", Arguments: map[string]any{"message": "before"}})
	if err != nil || before.IsError {
		t.Fatalf("a call before the server comes up: %v %+v", err, before)
	}

	serveLate(t, addr)
	eventually(t, "late__shout to be served", func() bool {
		return strings.Contains(getBody(t, base+"/v1/tools", upAgent), "late__shout")
	})
	select {
	case <-changed:
	case <-time.After(90 * time.Second):
		t.Fatal("the session opened before was not told the tool list changed")
	}
	after, err := early.CallTool(context.Background(), &mcp.CallToolParams{Name: "late__shout", Arguments: map[string]any{"message": "same session"}})
	if err != nil || after.IsError {
		t.Fatalf("the session opened before calls the new tool: %v %+v", err, after)
	}
	if before.Meta["custody/trace_id"] != after.Meta["custody/trace_id"] {
		t.Errorf("the session's calls have traces %v and %v: one session is one trace", before.Meta["custody/trace_id"], after.Meta["custody/trace_id"])
	}
	ans := callJSON(t, base, upAgent, `{"tool":"late__shout","arguments":{"message":"hi"}}`, 200)
	if sc, _ := ans["output"].(map[string]any)["structuredContent"].(map[string]any); sc["shout"] != "HI" {
		t.Errorf("late__shout answered %v", ans)
	}
	if body := getBody(t, base+"/v1/ledger?kind=tool.pinned", upOperator); !strings.Contains(body, "late__shout") {
		t.Errorf("late__shout was not pinned as it first appeared: %s", body)
	}
	res, err := mcpSession(t, base, upAgent).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	if !strings.Contains(strings.Join(names, " "), "late__shout") {
		t.Errorf("a new MCP session lists %v, without late__shout", names)
	}

	if err := os.Symlink(os.Args[0], later); err != nil {
		t.Fatal(err)
	}
	eventually(t, "/healthz to say ok", func() bool {
		_, body := healthOf(t, base)
		return body["status"] == "ok"
	})
	eventually(t, "d__echo to run", func() bool {
		req, _ := http.NewRequest("POST", base+"/v1/calls", strings.NewReader(`{"tool":"d__echo","arguments":{"message":"hi"}}`))
		req.Header.Set("Authorization", "Bearer "+upAgent)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode == 200
	})
}

// TestServeRequireAllUpstreams: with --require-all-upstreams, or the
// file's requireAllUpstreams, serve will not start on a server it cannot
// reach, and names it.
func TestServeRequireAllUpstreams(t *testing.T) {
	for _, tt := range []struct {
		name string
		flag bool
	}{{"Flag", true}, {"ConfigKey", false}} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			extra := map[string]any{"requireAllUpstreams": !tt.flag}
			cfg := degradedConfig(t, dir, filepath.Join(dir, "no-such-server"), "http://"+freeAddr(t)+"/mcp", extra)
			args := []string{"serve", "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--config", cfg}
			if tt.flag {
				args = append(args, "--require-all-upstreams")
			}
			code, _, stderr := runMain(t, upstreamEnv(), "", args...)
			if code == exitOK || !strings.Contains(stderr, `upstream "d"`) {
				t.Errorf("exit %d, stderr:\n%s\nwant a failure naming upstream d", code, stderr)
			}
		})
	}
}

// TestConfigCheckNamesDownServers: config check lists a down server's
// exact keys as exposed but unavailable, names the server, and lists the
// resource patterns.
func TestConfigCheckNamesDownServers(t *testing.T) {
	dir := t.TempDir()
	cfg := degradedConfig(t, dir, filepath.Join(dir, "no-such-server"), "http://"+freeAddr(t)+"/mcp",
		map[string]any{"resources": map[string]any{"d+notes://*": map[string]any{"maxBytes": 64}}})
	code, out, stderr := runMain(t, nil, "", "config", "check", cfg)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{`d__echo\s+d\s+yes \(down: unavailable\)\s+READ`, `t__echo\s+t\s+yes\s+READ`, `upstream d is down`, `upstream late is down`, `d\+notes://\*\s+READ\s+64`} {
		if !regexpMatch(want, out) {
			t.Errorf("config check does not say %s:\n%s", want, out)
		}
	}
}

// TestStdioWithAnUpstreamDown: custody mcp --stdio starts with a server
// down, and once it comes up its one session is told the tool list
// changed and calls the new tool.
func TestStdioWithAnUpstreamDown(t *testing.T) {
	dir := t.TempDir()
	later, addr := filepath.Join(dir, "later-server"), freeAddr(t)
	cfg := degradedConfig(t, dir, later, "http://"+addr+"/mcp", nil)
	b := startBridge(t, map[string]string{}, "--config", cfg, "--data", filepath.Join(dir, "data"), "--console-addr", "off")
	changed := make(chan struct{}, 16)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	_, cs, err := b.connect(ctx, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, b.stderr)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "late__shout", Arguments: map[string]any{"message": "early"}}); err != nil || !res.IsError {
		t.Fatalf("the tool of the server that is down: %v %+v", err, res)
	}
	serveLate(t, addr)
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatalf("the session was not told the tool list changed\n%s", b.stderr)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "late__shout", Arguments: map[string]any{"message": "hi"}})
	if err != nil || res.IsError {
		t.Fatalf("late__shout once its server is up: %v %+v", err, res)
	}
	// The client hangs up as an editor does: its stdin ends first, and
	// custody, which may still be writing, ends cleanly.
	b.stdin.Close()
	code := b.exit(t)
	cs.Close()
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, b.stderr)
	}
}
