package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// referenceServers returns the directory of the official reference MCP
// servers' executables (node_modules/.bin of an npm install of
// @modelcontextprotocol/server-filesystem, -memory and -everything), or
// skips the test when it is not there.
func referenceServers(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("CUSTODY_TEST_MCP_SERVERS")
	if dir == "" {
		t.Skip("CUSTODY_TEST_MCP_SERVERS is unset: no reference MCP servers from npm (.ci/run installs them)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the reference MCP servers cannot run")
	}
	for _, bin := range []string{"mcp-server-filesystem", "mcp-server-memory", "mcp-server-everything"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			t.Skipf("%s is missing in %s", bin, dir)
		}
	}
	return dir
}

// startEverything runs the everything server over streamable HTTP and
// returns its MCP endpoint.
func startEverything(t *testing.T, bin string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(filepath.Join(bin, "mcp-server-everything"), "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return "http://" + addr + "/mcp"
		}
		if time.Now().After(deadline) {
			t.Fatal("the everything server did not listen")
		}
	}
}

// TestReferenceServers fronts the official filesystem and memory servers
// (stdio) and the everything server (streamable HTTP) with custody serve,
// and checks every promise of a governed upstream call against what the
// servers really do.
func TestReferenceServers(t *testing.T) {
	bin := referenceServers(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "workspace")
	os.MkdirAll(filepath.Join(root, "notes"), 0o700)
	os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hello from disk\n"), 0o600)
	memFile := filepath.Join(dir, "memory.jsonl")
	cfg := map[string]any{
		"mcpServers": map[string]any{
			"fs":         map[string]any{"command": filepath.Join(bin, "mcp-server-filesystem"), "args": []string{root}},
			"memory":     map[string]any{"command": filepath.Join(bin, "mcp-server-memory"), "env": map[string]string{"MEMORY_FILE_PATH": memFile}},
			"everything": map[string]any{"url": startEverything(t, bin)},
		},
		"tools": map[string]any{
			"fs__read_text_file": map[string]any{"access": "READ", "effect": "NONE"},
			"fs__write_file": map[string]any{"access": "WRITE", "effect": "CONSEQUENTIAL", "approval": "HUMAN_CONFIRMATION",
				"arguments": map[string]any{"properties": map[string]any{"path": map[string]any{"pattern": "^notes/[a-z]+\\.md$"}}}},
			"memory__create_entities": map[string]any{"access": "WRITE", "effect": "REVERSIBLE"},
			"memory__read_graph":      map[string]any{"access": "READ", "effect": "NONE"},
			"everything__echo":        map[string]any{"access": "READ", "effect": "NONE", "openArguments": true},
		},
	}
	raw, _ := json.Marshal(cfg)
	cfgPath := filepath.Join(dir, "custody.json")
	os.WriteFile(cfgPath, raw, 0o600)
	base, _, stop := startServe(t, upstreamEnv(), "--data", filepath.Join(dir, "data"), "--config", cfgPath)
	defer stop()

	t.Run("ReadOverHTTP", func(t *testing.T) {
		ans := callJSON(t, base, upAgent, `{"tool":"fs__read_text_file","arguments":{"path":"hello.txt"}}`, 200)
		if !strings.Contains(toJSON(ans["output"]), "hello from disk") {
			t.Errorf("output %v", ans["output"])
		}
	})
	t.Run("ReadOverMCP", func(t *testing.T) {
		cs := mcpSession(t, base, upAgent)
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "fs__read_text_file", Arguments: map[string]any{"path": "hello.txt"}})
		if err != nil || res.IsError || len(res.Content) == 0 {
			t.Fatalf("%v %v", err, res)
		}
		if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "hello from disk") {
			t.Errorf("content %q", text)
		}
	})
	t.Run("RefusedWritesReachNothing", func(t *testing.T) {
		for name, args := range map[string]string{
			"ErrUndeclaredField": `{"path":"notes/a.md","content":"x","mode":"0777"}`,
			"ErrWrongType":       `{"path":"notes/a.md","content":7}`,
			"ErrOutsidePolicy":   `{"path":"../escape.md","content":"x"}`,
		} {
			e := errorOf(t, callJSON(t, base, upAgent, `{"tool":"fs__write_file","arguments":`+args+`}`, 400))
			if e["kind"] != "invalid" {
				t.Errorf("%s: %v", name, e)
			}
		}
		for _, p := range []string{filepath.Join(root, "notes", "a.md"), filepath.Join(dir, "escape.md")} {
			if _, err := os.Stat(p); err == nil {
				t.Errorf("%s was written", p)
			}
		}
		callJSON(t, base, upAgent, `{"tool":"memory__create_entities","arguments":{"entities":[{"name":"n","entityType":"t","observations":[],"secret":1}]}}`, 400)
		if n := entities(t, base); n != 0 {
			t.Errorf("a refused entity was created: %d entities", n)
		}
		callJSON(t, base, upAgent, `{"tool":"memory__create_entities","arguments":{"entities":[{"name":"n","entityType":"t","observations":["o"]}]}}`, 200)
		if n := entities(t, base); n != 1 {
			t.Errorf("the entity was not created: %d entities", n)
		}
	})
	t.Run("WriteHeldThenRunsOnce", func(t *testing.T) {
		body := `{"trace_id":"fs1","tool":"fs__write_file","arguments":{"path":"notes/plan.md","content":"approved text"}}`
		e := errorOf(t, callJSON(t, base, upAgent, body, 202))
		target := filepath.Join(root, "notes", "plan.md")
		if _, err := os.Stat(target); err == nil {
			t.Fatal("a held write reached the disk")
		}
		decide(t, base, e["approval_request_id"].(string), "approved")
		callJSON(t, base, upAgent, body, 200)
		if got, _ := os.ReadFile(target); string(got) != "approved text" {
			t.Errorf("on disk: %q", got)
		}
		os.Remove(target)
		callJSON(t, base, upAgent, body, 409)
		if _, err := os.Stat(target); err == nil {
			t.Error("a replayed approval wrote again")
		}
	})
	t.Run("ErrUngovernedDenied", func(t *testing.T) {
		callJSON(t, base, upAgent, `{"tool":"fs__read_file","arguments":{"path":"hello.txt"}}`, 403)
	})
	t.Run("StreamableHTTPUpstream", func(t *testing.T) {
		ans := callJSON(t, base, upAgent, `{"tool":"everything__echo","arguments":{"message":"over http"}}`, 200)
		if !strings.Contains(toJSON(ans["output"]), "over http") {
			t.Errorf("output %v", ans["output"])
		}
		// openArguments passes on what the server's schema does not declare.
		callJSON(t, base, upAgent, `{"tool":"everything__echo","arguments":{"message":"open","extra":1}}`, 200)
	})
	t.Run("Ledger", func(t *testing.T) {
		if body := getBody(t, base+"/v1/ledger/verify", upOperator); !strings.Contains(body, `"ok":true`) {
			t.Errorf("verify: %s", body)
		}
	})
}

// entities counts the memory server's entities, read through custody.
func entities(t *testing.T, base string) int {
	t.Helper()
	var ans struct {
		Output struct {
			StructuredContent struct {
				Entities []json.RawMessage `json:"entities"`
			} `json:"structuredContent"`
		} `json:"output"`
	}
	if err := json.Unmarshal([]byte(post(t, base+"/v1/calls", upAgent, `{"tool":"memory__read_graph","arguments":{}}`, 200)), &ans); err != nil {
		t.Fatal(err)
	}
	return len(ans.Output.StructuredContent.Entities)
}
