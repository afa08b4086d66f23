package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/mcptest"
	"github.com/custody-dev/custody/store/sqlite"
)

// TestElicitationTypeScriptClient runs the official TypeScript SDK's
// client, with an elicitation handler, on custody mcp --stdio in front of
// the reference filesystem server, whose edit_file names the client among
// its approvers: its user approves one edit, which runs, and declines
// another, which does not, each in the form custody sends (the exact
// arguments and the edit's diff); a client that declared no elicitation
// is never asked, and its call is held for an operator. The ledger
// records each decision as the client's, with its name and version.
func TestElicitationTypeScriptClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: no TypeScript client to run")
	}
	servers := os.Getenv("CUSTODY_TEST_MCP_SERVERS")
	sdk := filepath.Join(servers, "..", "@modelcontextprotocol", "sdk")
	if _, err := os.Stat(filepath.Join(sdk, "dist", "esm", "client", "stdio.js")); servers == "" || err != nil {
		t.Skip("no @modelcontextprotocol/sdk beside CUSTODY_TEST_MCP_SERVERS (.ci/run installs it with the reference servers)")
	}
	fsServer := filepath.Join(servers, "mcp-server-filesystem")
	if _, err := os.Stat(fsServer); err != nil {
		t.Skipf("mcp-server-filesystem is missing in %s", servers)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "custody")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	root := filepath.Join(dir, "workspace")
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "plan.md")
	if err := os.WriteFile(file, []byte("# Plan\nship on friday\nthen rest\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(map[string]any{
		"mcpServers": map[string]any{"fs": map[string]any{"command": fsServer, "args": []string{root}}},
		"tools": map[string]any{"fs__edit_file": map[string]any{"access": "WRITE", "effect": "CONSEQUENTIAL",
			"approvers": []string{"console", "client"}}},
	})
	cfg := writeTemp(t, dir, "custody.json", string(raw))
	data := filepath.Join(dir, "data")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("testdata", "elicit_client.mjs"), sdk, bin, cfg, data, file)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	type result struct {
		IsError bool
		Content []struct{ Text string }
		Meta    struct {
			Error struct {
				Kind string `json:"kind"`
				ID   string `json:"approval_request_id"`
			} `json:"custody/error"`
		} `json:"_meta"`
	}
	var got struct {
		Forms []struct {
			Mode            string
			Message         string
			RequestedSchema json.RawMessage
		}
		Approved, Declined, Held result
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("the script printed %s: %v", out, err)
	}

	if len(got.Forms) != 2 {
		t.Fatalf("the user was shown %d forms, want 2 (the plain client none):\n%s", len(got.Forms), out)
	}
	f := got.Forms[0]
	for _, want := range []string{"Tool: fs__edit_file", "Agent: mcp-stdio", `"path": "` + file + `"`, "- ship on friday\n+ ship on monday\n"} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("the form does not show %q:\n%s", want, f.Message)
		}
	}
	if f.Mode != "form" || !strings.Contains(string(f.RequestedSchema), `"enum":["approve","decline"]`) {
		t.Errorf("form mode %q, schema %s; want a form asking approve or decline", f.Mode, f.RequestedSchema)
	}
	if got.Approved.IsError {
		t.Errorf("the approved edit: %+v", got.Approved)
	}
	if d := got.Declined.Meta.Error; !got.Declined.IsError || d.Kind != custody.EDENIED || d.ID == "" {
		t.Errorf("the declined edit: %+v", got.Declined)
	}
	if d := got.Held.Meta.Error; !got.Held.IsError || d.Kind != custody.EPENDING || d.ID == "" {
		t.Errorf("the plain client's edit: %+v, want pending_approval", got.Held)
	}
	if body, _ := os.ReadFile(file); string(body) != "# Plan\nship on monday\nthen rest\n" {
		t.Errorf("the file holds %q: want the approved edit alone", body)
	}

	db, err := sqlite.Open(context.Background(), data, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	es, err := db.Entries(context.Background(), custody.Query{Kind: custody.KindApprovalDecided})
	if err != nil || len(es) != 2 {
		t.Fatalf("approval.decided entries: %d, %v; want 2", len(es), err)
	}
	for i, want := range []string{"approved", "declined"} {
		var body struct {
			Decision string
			Client   struct{ Name, Version string }
		}
		if err := json.Unmarshal(es[i].Body, &body); err != nil {
			t.Fatal(err)
		}
		if es[i].Actor != "client:mcp-stdio" || body.Decision != want || body.Client.Name != "ts-elicit-test" || body.Client.Version != "1.2.3" {
			t.Errorf("approval.decided %d by %s: %s; want %s by client:mcp-stdio in ts-elicit-test 1.2.3", i, es[i].Actor, es[i].Body, want)
		}
	}
	if a, err := db.Approval(context.Background(), got.Held.Meta.Error.ID); err != nil || a.Status != custody.ApprovalPending {
		t.Errorf("the plain client's approval: %+v, %v; want pending for an operator", a, err)
	}
}

// TestSeedSystemsApprovedByOperators: no tool a seed system serves names
// the MCP client among its approvers (serveSystems refuses one that
// does). assure serves none: its ward rounds run on a gateway of their
// own, with no MCP door.
func TestSeedSystemsApprovedByOperators(t *testing.T) {
	m := &Main{Stderr: io.Discard, Getenv: func(string) string { return "" }}
	ctx, cancel := context.WithCancel(context.Background())
	names := slices.DeleteFunc(builtWith().Names(), func(n string) bool { return n == "assure" })
	set := serveSettings{systems: names, llm: "template", room: filepath.Join(t.TempDir(), "room.db")}
	sys, err := m.serveSystems(ctx, set)
	if err != nil {
		cancel()
		t.Fatalf("serving every seed system: %v", err)
	}
	defer func() {
		cancel()
		sys.Runners[len(sys.Runners)-1](ctx, nil) // closes the systems
	}()
	if len(sys.Tools) == 0 {
		t.Fatal("the seed systems serve no tools")
	}
	for _, tool := range sys.Tools {
		if tool.Spec.ClientApproves() {
			t.Errorf("seed system tool %s names the MCP client among its approvers", tool.Spec.Name)
		}
	}
}

// TestElicitationThroughServe: serve's /mcp, and the custody mcp --stdio
// --server bridge in front of it, put a held call of a tool whose
// approvers name the client to a go-sdk client with an elicitation
// handler; its user's approval runs the call once, recorded as the
// client's decision.
func TestElicitationThroughServe(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "lines.txt")
	raw, _ := json.Marshal(map[string]any{
		"mcpServers": map[string]any{"t": map[string]any{"command": os.Args[0],
			"env": map[string]string{mcptest.EnvServe: "1", mcptest.EnvWriteFile: file}}},
		"tools": map[string]any{"t__append": map[string]any{"access": "WRITE", "effect": "CONSEQUENTIAL",
			"approvers": []string{"console", "client"}}},
	})
	cfg := writeTemp(t, dir, "custody.json", string(raw))
	base, _, stop := startServe(t, upstreamEnv(), "--data", filepath.Join(dir, "data"), "--config", cfg)
	defer stop()
	var mu sync.Mutex
	var forms []string
	opts := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		defer mu.Unlock()
		forms = append(forms, r.Params.Message)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve"}}, nil
	}}
	sessions := map[string]func(t *testing.T) *mcp.ClientSession{
		"MCP": func(t *testing.T) *mcp.ClientSession {
			hc := &http.Client{Transport: bearer{token: upAgent, next: http.DefaultTransport}}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-elicit", Version: "7"}, opts).Connect(context.Background(),
				&mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: hc}, nil)
			if err != nil {
				t.Fatal(err)
			}
			return cs
		},
		"Bridge": func(t *testing.T) *mcp.ClientSession {
			b := startBridge(t, map[string]string{"CUSTODY_AGENT_TOKEN": upAgent}, "--server", base)
			c := mcp.NewClient(&mcp.Implementation{Name: "go-elicit", Version: "7"}, opts)
			cs, err := c.Connect(context.Background(), &mcp.IOTransport{Reader: b.stdout, Writer: b.stdin}, nil)
			if err != nil {
				t.Fatal(err)
			}
			return cs
		},
	}
	for _, name := range []string{"MCP", "Bridge"} {
		t.Run(name, func(t *testing.T) {
			cs := sessions[name](t)
			defer cs.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "t__append", Arguments: map[string]any{"line": "via " + name}})
			if err != nil || res.IsError {
				t.Fatalf("approved in the client: %+v, %v", res, err)
			}
			mu.Lock()
			last := forms[len(forms)-1]
			mu.Unlock()
			if !strings.Contains(last, "Tool: t__append") || !strings.Contains(last, `"line": "via `+name+`"`) {
				t.Errorf("the form:\n%s", last)
			}
			if body, _ := os.ReadFile(file); !strings.Contains(string(body), "via "+name+"\n") {
				t.Errorf("the file holds %q", body)
			}
		})
	}
	ledger := getBody(t, base+"/v1/ledger?kind=approval.decided", upOperator)
	if n := strings.Count(ledger, `"actor":"client:bot"`); n != 2 || strings.Count(ledger, `"name":"go-elicit"`) != 2 {
		t.Errorf("approval.decided entries, want 2 by client:bot in go-elicit: %.2000s", ledger)
	}
}
