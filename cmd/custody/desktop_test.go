package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/custody-dev/custody/internal/browsertest"
	"github.com/custody-dev/custody/internal/mcptest"
)

// desktopClient is what Claude Desktop does, with the official
// TypeScript SDK: it launches `custody mcp --stdio --server URL` as its
// stdio child and calls one tool, allowing the call as long as the
// approval may take, and prints the result.
const desktopClient = `
import { pathToFileURL } from "node:url";
const [sdk, bin, server, tool, args] = process.argv.slice(2);
const { Client } = await import(pathToFileURL(sdk + "/dist/esm/client/index.js").href);
const { StdioClientTransport } = await import(pathToFileURL(sdk + "/dist/esm/client/stdio.js").href);
const transport = new StdioClientTransport({
  command: bin, args: ["mcp", "--stdio", "--server", server],
  env: { CUSTODY_AGENT_TOKEN: process.env.CUSTODY_AGENT_TOKEN }, stderr: "inherit",
});
const client = new Client({ name: "desktop-shaped", version: "1" });
await client.connect(transport);
let progress = 0;
const result = await client.callTool({ name: tool, arguments: JSON.parse(args) }, undefined,
  { timeout: 300000, resetTimeoutOnProgress: true, onprogress: () => { progress++; } });
await client.close();
console.log(JSON.stringify({ result, progress }));
`

// desktopResult is what the client script prints.
type desktopResult struct {
	Result struct {
		IsError bool
		Content []struct{ Text string }
	}
	Progress int
}

// TestDesktopApprovedInTheConsole is the set-up most people use: an
// editor launches custody as a stdio child, bridged to a running serve,
// and a human decides a held write in serve's console, in a real
// browser, by the link the held result gave. With approvalWait the same
// call returns the result once approved; without it, the client restarts
// and its retry finds the approval and runs.
func TestDesktopApprovedInTheConsole(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: no TypeScript client to run")
	}
	sdk := filepath.Join(os.Getenv("CUSTODY_TEST_MCP_SERVERS"), "..", "@modelcontextprotocol", "sdk")
	if _, err := os.Stat(filepath.Join(sdk, "dist", "esm", "client", "stdio.js")); os.Getenv("CUSTODY_TEST_MCP_SERVERS") == "" || err != nil {
		t.Skip("no @modelcontextprotocol/sdk beside CUSTODY_TEST_MCP_SERVERS (.ci/run installs it with the reference servers)")
	}
	ctx := browsertest.Start(t, 4*time.Minute)
	dir := t.TempDir()
	bin := filepath.Join(dir, "custody")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	script := writeTemp(t, dir, "desktop.mjs", desktopClient)
	signedIn := map[string]bool{} // by serve, each its own origin
	approveIn := func(base, id string) {
		t.Helper()
		steps := []chromedp.Action[chromedp.Void]{}
		if !signedIn[base] {
			steps = append(steps, browsertest.SignIn(base, upOperator))
			signedIn[base] = true
		}
		view := `#approval-view [data-testid=approval][data-id="` + id + `"]`
		steps = append(steps,
			chromedp.Navigate(base+"/#/approvals/"+id),
			chromedp.WaitVisible(chromedp.CSS(view+` [data-testid=approve]`)),
			chromedp.Click(chromedp.CSS(view+` [data-testid=approve]`)),
			chromedp.WaitNotPresent(chromedp.CSS(view+` [data-testid=approve]`)),
		)
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("approve %s in the console: %v", id, err)
		}
	}
	run := func(base, args string) (desktopResult, *bytes.Buffer, error) {
		cmd := exec.CommandContext(ctx, node, script, sdk, bin, base, "t__append", args)
		cmd.Env = append(os.Environ(), "CUSTODY_AGENT_TOKEN="+upAgent)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		var r desktopResult
		if err == nil {
			err = json.Unmarshal(out, &r)
		}
		return r, &stderr, err
	}

	t.Run("approvalWait", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "lines")
		base, _, stop := startServe(t, upstreamEnv(), "--data", filepath.Join(t.TempDir(), "data"),
			"--config", desktopConfig(t, file, "2m"))
		defer stop()
		done := make(chan struct{})
		var res desktopResult
		var runErr error
		var stderr *bytes.Buffer
		go func() {
			defer close(done)
			res, stderr, runErr = run(base, `{"line":"waited"}`)
		}()
		id := waitPending(t, base)
		approveIn(base, id)
		<-done
		if runErr != nil {
			t.Fatalf("client: %v\n%s", runErr, stderr)
		}
		if res.Result.IsError || len(res.Result.Content) == 0 || res.Result.Content[0].Text != "appended" || res.Progress == 0 {
			t.Errorf("the same call, once approved: %+v", res)
		}
		if b, _ := os.ReadFile(file); string(b) != "waited\n" {
			t.Errorf("the server's file: %q", b)
		}
	})

	t.Run("retry after a restart", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "lines")
		base, _, stop := startServe(t, upstreamEnv(), "--data", filepath.Join(t.TempDir(), "data"),
			"--config", desktopConfig(t, file, ""))
		defer stop()
		held, stderr, err := run(base, `{"line":"retried"}`)
		if err != nil {
			t.Fatalf("client: %v\n%s", err, stderr)
		}
		if !held.Result.IsError || len(held.Result.Content) == 0 {
			t.Fatalf("the held call: %+v", held)
		}
		// The held result tells the human where to decide.
		link := regexp.MustCompile(regexp.QuoteMeta(base) + `/#/approvals/([A-Za-z0-9_-]+)`).FindStringSubmatch(held.Result.Content[0].Text)
		if link == nil || !strings.Contains(held.Result.Content[0].Text, "custody approvals approve") {
			t.Fatalf("no console link and CLI command in %q", held.Result.Content[0].Text)
		}
		if b, _ := os.ReadFile(file); len(b) != 0 {
			t.Fatalf("a held call ran: %q", b)
		}
		approveIn(base, link[1])
		// A new client process, a new session: the agent's approval holds.
		again, stderr, err := run(base, `{"line":"retried"}`)
		if err != nil {
			t.Fatalf("client: %v\n%s", err, stderr)
		}
		if again.Result.IsError || len(again.Result.Content) == 0 || again.Result.Content[0].Text != "appended" {
			t.Errorf("the retry: %+v", again)
		}
		if b, _ := os.ReadFile(file); string(b) != "retried\n" {
			t.Errorf("the server's file: %q", b)
		}
	})
}

// desktopConfig fronts the test server, its append tool held for
// approval, waiting for the decision when wait is set.
func desktopConfig(t *testing.T, file, wait string) string {
	t.Helper()
	policy := map[string]any{"access": "WRITE", "effect": "CONSEQUENTIAL"}
	if wait != "" {
		policy["approvalWait"] = wait
	}
	raw, _ := json.Marshal(map[string]any{
		"mcpServers": map[string]any{"t": map[string]any{
			"command": os.Args[0], "env": map[string]string{mcptest.EnvServe: "1", mcptest.EnvWriteFile: file}}},
		"tools": map[string]any{"t__append": policy},
	})
	path := filepath.Join(t.TempDir(), "custody.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitPending returns the id of the one pending approval on serve at
// base, waiting until there is one.
func waitPending(t *testing.T, base string) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		var list struct {
			Approvals []struct {
				ID string `json:"approval_request_id"`
			} `json:"approvals"`
		}
		if json.Unmarshal([]byte(getBody(t, base+"/v1/approvals?status=pending", upOperator)), &list) == nil && len(list.Approvals) == 1 {
			return list.Approvals[0].ID
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no pending approval appeared")
	return ""
}
