package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody/internal/lockedbuf"
)

// TestHeldCallSaysWhereToDecide: a consequential call held for approval
// over /mcp tells, in the text the model shows its user, where a human
// decides it: the console's page of that approval and the CLI command on
// this data directory.
func TestHeldCallSaysWhereToDecide(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	base, _, stop := startServe(t, nil, "--data", data)
	defer stop()
	cs := mcpSession(t, base, readToken(t, filepath.Join(data, agentTokenFile)))
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "post_announcement",
		Arguments: map[string]any{"channel": "ops", "message": "DEPLOY AT 5"}})
	if err != nil || !res.IsError || len(res.Content) == 0 {
		t.Fatalf("the held call: %+v, %v", res, err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	d, _ := res.Meta["custody/error"].(map[string]any)
	id, _ := d["approval_request_id"].(string)
	if id == "" {
		t.Fatalf("no approval named in %v", res.Meta)
	}
	for _, want := range []string{base + "/#/approvals/" + id, "custody approvals approve " + id} {
		if !strings.Contains(text, want) {
			t.Errorf("the held call's text lacks %q:\n%s", want, text)
		}
	}
}

// TestHeldCallOverStdioNamesTheDataDirectory: over custody mcp --stdio,
// launched by a client from wherever it likes, the CLI command a held
// call names decides it from any directory: it names the data directory
// absolutely.
func TestHeldCallOverStdioNamesTheDataDirectory(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	abs := filepath.Join(dir, "rel-data")
	if got := heldOverStdio(t, "--data", "rel-data"); !strings.Contains(got, "custody approvals approve ") || !strings.Contains(got, "--data "+abs) {
		t.Errorf("the held call does not name the CLI command with --data %s:\n%s", abs, got)
	}
}

// TestStdioTakesTheFilesDataDirectory: custody mcp --stdio --config FILE
// keeps its evidence where the file says, a relative "data" being the
// file's, not the directory the client launched custody in.
func TestStdioTakesTheFilesDataDirectory(t *testing.T) {
	confDir, launchDir := t.TempDir(), t.TempDir()
	cfg := writeTemp(t, confDir, "custody.json", `{"data": "evidence"}`)
	t.Chdir(launchDir)
	got := heldOverStdio(t, "--config", cfg)
	want := filepath.Join(confDir, "evidence")
	if !strings.Contains(got, "--data "+want) {
		t.Errorf("the held call does not name --data %s:\n%s", want, got)
	}
	if _, err := os.Stat(filepath.Join(want, "ledger.id")); err != nil {
		t.Errorf("no ledger in the file's data directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(launchDir, "custody-data")); err == nil {
		t.Error("a data directory was made where custody was launched")
	}
}

// heldOverStdio runs custody mcp --stdio with args, makes a call the
// example envelope holds for approval, and returns what custody wrote
// once it has answered it and the client has gone.
func heldOverStdio(t *testing.T, args ...string) string {
	t.Helper()
	inR, inW := io.Pipe()
	var out lockedbuf.Buffer
	m := &Main{Stdin: inR, Stdout: &out, Stderr: io.Discard, Getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() { done <- m.Run(context.Background(), append([]string{"mcp", "--stdio"}, args...)) }()
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"post_announcement","arguments":{"channel":"ops","message":"DEPLOY AT 5"}}}`,
	} {
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.String(), `"id":2`); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no answer to the call:\n%s", out.String())
		}
	}
	inW.Close()
	if code := <-done; code != exitOK {
		t.Errorf("exit %d", code)
	}
	return out.String()
}
