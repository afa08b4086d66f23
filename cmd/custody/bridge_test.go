//lint:file-ignore SA1019 roots is deprecated by SEP-2577 and still relayed for the clients and servers that use it.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody/internal/lockedbuf"
)

// bridged is a custody mcp --stdio --server run in process, on pipes.
type bridged struct {
	stdin  io.WriteCloser // the client writes here
	stdout io.ReadCloser  // and reads here
	stderr *lockedbuf.Buffer
	sent   *lockedbuf.Buffer // every byte written to stdin
	done   chan int
}

// startBridge runs custody mcp --stdio --server with args and env.
func startBridge(t *testing.T, env map[string]string, args ...string) *bridged {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	b := &bridged{stdout: outR, stderr: &lockedbuf.Buffer{}, sent: &lockedbuf.Buffer{}, done: make(chan int, 1)}
	b.stdin = teeWriteCloser{inW, b.sent}
	m := &Main{Stdin: inR, Stdout: outW, Stderr: b.stderr, Getenv: func(k string) string { return env[k] }}
	go func() {
		b.done <- m.Run(context.Background(), append([]string{"mcp", "--stdio"}, args...))
		outW.Close()
		inR.Close()
	}()
	return b
}

// connect opens a go-sdk client session on the bridge's pipes.
func (b *bridged) connect(ctx context.Context, opts *mcp.ClientOptions) (*mcp.Client, *mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "bridge-test", Version: "1"}, opts)
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: b.stdout, Writer: b.stdin}, nil)
	return c, cs, err
}

// exit returns the bridge's exit code once it has ended.
func (b *bridged) exit(t *testing.T) int {
	t.Helper()
	select {
	case code := <-b.done:
		return code
	case <-time.After(30 * time.Second):
		t.Fatalf("the bridge did not end after its stdin did; stderr:\n%s", b.stderr)
		return -1
	}
}

type teeWriteCloser struct {
	io.WriteCloser
	copy io.Writer
}

func (w teeWriteCloser) Write(p []byte) (int, error) {
	w.copy.Write(p)
	return w.WriteCloser.Write(p)
}

// exchange is one request the recording proxy passed to serve.
type exchange struct {
	method, session, version, accept, contentType string
	body                                          []byte
}

// recorder notes what reaches serve through it.
type recorder struct {
	mu   sync.Mutex
	seen []exchange
	// listening is closed once serve has taken a GET of the stream of
	// server messages (it answers the headers once the stream is its).
	listening chan struct{}
	once      sync.Once
}

// waitListening waits until serve has taken the bridge's GET stream.
func (r *recorder) waitListening(t *testing.T) {
	t.Helper()
	select {
	case <-r.listening:
	case <-time.After(30 * time.Second):
		t.Fatal("the bridge opened no stream of server messages")
	}
}

// headerWriter calls onHeader with the status of the response.
type headerWriter struct {
	http.ResponseWriter
	onHeader func(int)
}

func (w *headerWriter) WriteHeader(code int) {
	w.onHeader(code)
	w.ResponseWriter.WriteHeader(code)
}

func (w *headerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (r *recorder) exchanges() []exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

// recordingProxy is a reverse proxy in front of serve at base that
// records every request to it.
func recordingProxy(t *testing.T, base string) (string, *recorder) {
	t.Helper()
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{listening: make(chan struct{})}
	proxy := httputil.NewSingleHostReverseProxy(target)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec.mu.Lock()
		rec.seen = append(rec.seen, exchange{r.Method, r.Header.Get("Mcp-Session-Id"), r.Header.Get("Mcp-Protocol-Version"),
			r.Header.Get("Accept"), r.Header.Get("Content-Type"), body})
		rec.mu.Unlock()
		if r.Method == http.MethodGet {
			w = &headerWriter{w, func(code int) {
				if code == http.StatusOK {
					rec.once.Do(func() { close(rec.listening) })
				}
			}}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	return hs.URL, rec
}

// TestBridgeSession drives custody serve through custody mcp --stdio
// --server with the go-sdk client: it initializes, lists the tools, calls
// one, has a consequential call held and told where to decide it, and
// ends the session at serve when its stdin ends. Every message reaches
// serve as the client wrote it, with the session's headers.
func TestBridgeSession(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	base, _, stop := startServe(t, nil, "--data", data)
	defer stop()
	proxy, rec := recordingProxy(t, base)
	b := startBridge(t, map[string]string{"CUSTODY_AGENT_TOKEN": readToken(t, filepath.Join(data, agentTokenFile))}, "--server", proxy)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, cs, err := b.connect(ctx, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, b.stderr)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if strings.Join(names, ",") != "get_time,post_announcement,write_note" {
		t.Errorf("tools %v, want the example envelope's", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_time", Arguments: map[string]any{"zone": "UTC"}})
	if err != nil || res.IsError || res.Meta["custody/receipt"] == nil {
		t.Fatalf("get_time: %+v, %v", res, err)
	}
	held, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "post_announcement",
		Arguments: map[string]any{"channel": "ops", "message": "DEPLOY AT 5"}})
	if err != nil || !held.IsError || len(held.Content) == 0 {
		t.Fatalf("the held call: %+v, %v", held, err)
	}
	d, _ := held.Meta["custody/error"].(map[string]any)
	id, _ := d["approval_request_id"].(string)
	text := held.Content[0].(*mcp.TextContent).Text
	for _, want := range []string{base + "/#/approvals/" + id, "custody approvals approve " + id} {
		if id == "" || !strings.Contains(text, want) {
			t.Errorf("the held call's text lacks %q:\n%s", want, text)
		}
	}
	cs.Close()
	if code := b.exit(t); code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, b.stderr)
	}

	seen := rec.exchanges()
	var session string
	for _, x := range seen {
		if x.session != "" {
			session = x.session
			break
		}
	}
	if session == "" {
		t.Fatal("no request carried the session's Mcp-Session-Id")
	}
	for _, line := range strings.Split(strings.TrimSpace(b.sent.String()), "\n") {
		if !slices.ContainsFunc(seen, func(x exchange) bool { return x.method == http.MethodPost && string(x.body) == line }) {
			t.Errorf("no POST carried the client's bytes %s", line)
		}
	}
	for _, x := range seen {
		switch {
		case x.method == http.MethodPost && (x.contentType != "application/json" || x.accept != "application/json, text/event-stream"):
			t.Errorf("a POST with Content-Type %q and Accept %q", x.contentType, x.accept)
		case x.method == http.MethodPost && strings.Contains(string(x.body), `"tools/`) && (x.session != session || x.version == ""):
			t.Errorf("%s went with session %q and version %q", x.body, x.session, x.version)
		}
	}
	if !slices.ContainsFunc(seen, func(x exchange) bool { return x.method == http.MethodGet && x.session == session }) {
		t.Error("the stream of server messages was not opened")
	}
	if !slices.ContainsFunc(seen, func(x exchange) bool { return x.method == http.MethodDelete && x.session == session }) {
		t.Error("the session was not ended at serve")
	}
	if code := mcpPing(t, base, readToken(t, filepath.Join(data, agentTokenFile)), session); code != http.StatusNotFound {
		t.Errorf("a ping on the session after the bridge ended: %d, want 404", code)
	}
}

// TestBridgeReopensAnEndedSession: when serve no longer knows the
// session (it restarted, or closed the session when it idled), the
// bridge opens a new one with the client's own initialize, and the
// client's session goes on.
func TestBridgeReopensAnEndedSession(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	base, _, stop := startServe(t, nil, "--data", data)
	defer stop()
	token := readToken(t, filepath.Join(data, agentTokenFile))
	proxy, rec := recordingProxy(t, base)
	b := startBridge(t, map[string]string{"CUSTODY_AGENT_TOKEN": token}, "--server", proxy)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, cs, err := b.connect(ctx, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, b.stderr)
	}
	sessions := func() []string {
		var ids []string
		for _, x := range rec.exchanges() {
			if x.session != "" && !slices.Contains(ids, x.session) {
				ids = append(ids, x.session)
			}
		}
		return ids
	}
	if _, err := cs.ListTools(ctx, nil); err != nil || len(sessions()) != 1 {
		t.Fatalf("tools/list: %v; sessions %v", err, sessions())
	}
	first := sessions()[0]
	req, _ := http.NewRequest(http.MethodDelete, base+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", first)
	if res, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else if res.Body.Close(); mcpPing(t, base, token, first) != http.StatusNotFound {
		t.Fatalf("the DELETE left the session open: %d", res.StatusCode)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_time", Arguments: map[string]any{"zone": "UTC"}})
	if err != nil || res.IsError {
		t.Fatalf("get_time after the session ended: %+v, %v\n%s", res, err, b.stderr)
	}
	if got := sessions(); len(got) != 2 {
		t.Errorf("sessions %v, want the first and a new one", got)
	}
	if !strings.Contains(b.stderr.String(), "a new one is open") {
		t.Errorf("stderr does not say a new session was opened:\n%s", b.stderr)
	}
	cs.Close()
	if code := b.exit(t); code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, b.stderr)
	}
}

// mcpPing pings /mcp on session and returns the status.
func mcpPing(t *testing.T, base, token, session string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// talkServer is an upstream whose tool talks back while it runs: three
// progress notifications, then a roots/list request of the client.
func talkServer(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "talk", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "work", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if tok := req.Params.GetProgressToken(); tok != nil {
				for i := 1; i <= 3; i++ {
					if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 3}); err != nil {
						return nil, err
					}
				}
			}
			roots, err := req.Session.ListRoots(ctx, nil)
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "roots: " + err.Error()}}}, nil
			}
			var uris []string
			for _, r := range roots.Roots {
				uris = append(uris, r.URI)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "roots " + strings.Join(uris, ",")}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	return hs.URL
}

// TestBridgeRelaysTalkBack: what an upstream sends while its tool runs
// (progress, its requests of the client) reaches the client through
// serve and the bridge before the result, on the call's event stream or
// on the GET stream of server messages, and the client's answers go
// back.
func TestBridgeRelaysTalkBack(t *testing.T) {
	dir := t.TempDir()
	cfg := writeTemp(t, dir, "custody.json", toJSON(map[string]any{
		"mcpServers": map[string]any{"w": map[string]any{"url": talkServer(t)}},
		"tools":      map[string]any{"w__work": map[string]any{"access": "READ", "effect": "NONE"}},
	}))
	base, _, stop := startServe(t, upstreamEnv(), "--data", filepath.Join(dir, "data"), "--config", cfg)
	defer stop()
	proxy, rec := recordingProxy(t, base)
	b := startBridge(t, map[string]string{"CUSTODY_AGENT_TOKEN": upAgent}, "--server", proxy+"/mcp")
	progress := make(chan float64, 16)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, cs, err := b.connect(ctx, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		progress <- r.Params.Progress
	}})
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, b.stderr)
	}
	c.AddRoots(&mcp.Root{URI: "file:///srv/work", Name: "work"})
	params := &mcp.CallToolParams{Name: "w__work", Arguments: map[string]any{}}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "roots file:///srv/work" {
		t.Fatalf("w__work: %+v, %v\n%s", res, err, b.stderr)
	}
	for i := 1; i <= 3; i++ {
		select {
		case p := <-progress:
			if p != float64(i) {
				t.Errorf("progress %v, want %d", p, i)
			}
		case <-ctx.Done():
			t.Fatalf("progress %d did not come", i)
		}
	}
	// Without a progress token serve answers the call itself, as JSON:
	// the server's request of the client comes on the stream of server
	// messages, and its answer goes back.
	rec.waitListening(t)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "w__work", Arguments: map[string]any{}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "roots file:///srv/work" {
		t.Fatalf("w__work without progress: %+v, %v\n%s", res, err, b.stderr)
	}
	cs.Close()
	if code := b.exit(t); code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, b.stderr)
	}
}

// TestBridgeWrongToken: a token serve refuses fails the client's
// initialize, and stderr says the token is refused and how to fix it.
func TestBridgeWrongToken(t *testing.T) {
	base, _, stop := startServe(t, nil, "--data", filepath.Join(t.TempDir(), "data"))
	defer stop()
	b := startBridge(t, map[string]string{"CUSTODY_AGENT_TOKEN": "not-a-token-of-this-serve"}, "--server", base)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, cs, err := b.connect(ctx, nil)
	if err == nil {
		cs.Close()
		t.Fatal("a refused token connected")
	}
	if !strings.Contains(err.Error(), "refused the agent token") {
		t.Errorf("the client's error does not say the token was refused: %v", err)
	}
	for _, want := range []string{"refused the agent token", "401", "CUSTODY_AGENT_TOKEN", "--token-file", "agent.token"} {
		if !strings.Contains(b.stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, b.stderr)
		}
	}
	b.stdin.Close()
	if code := b.exit(t); code != exitOK {
		t.Errorf("exit %d", code)
	}
}

// TestBridgeServeDown: with nothing listening at the URL, a request is
// answered at once with a JSON-RPC error of its id, a notification with
// nothing, stderr says why, and stdin's end ends the bridge.
func TestBridgeServeDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	b := startBridge(t, map[string]string{"CUSTODY_AGENT_TOKEN": "agent-secret-0000000001"}, "--server", down)
	lines := make(chan string, 8)
	go func() {
		sc := bufio.NewScanner(b.stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	for _, msg := range []string{
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"first","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`,
	} {
		if _, err := io.WriteString(b.stdin, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]string{}
	for len(got) < 2 {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("stdout ended with %v", got)
			}
			var r struct {
				ID    json.RawMessage
				Error struct{ Message string }
			}
			if err := json.Unmarshal([]byte(line), &r); err != nil || r.Error.Message == "" {
				t.Fatalf("not a JSON-RPC error: %s", line)
			}
			got[string(r.ID)] = r.Error.Message
		case <-time.After(30 * time.Second):
			t.Fatalf("no answer for every request: %v\nstderr:\n%s", got, b.stderr)
		}
	}
	for _, id := range []string{`"first"`, `7`} {
		if !strings.Contains(got[id], "cannot reach custody serve at "+down+"/mcp") {
			t.Errorf("the answer to %s: %q", id, got[id])
		}
	}
	if !strings.Contains(b.stderr.String(), "cannot reach custody serve at "+down) {
		t.Errorf("stderr does not say serve is unreachable:\n%s", b.stderr)
	}
	b.stdin.Close()
	if code := b.exit(t); code != exitOK {
		t.Errorf("exit %d", code)
	}
	if rest, ok := <-lines; ok {
		t.Errorf("a line for the notification: %s", rest)
	}
}

// TestBridgeFlags: custody mcp --server refuses, naming the fix, what
// cannot bridge.
func TestBridgeFlags(t *testing.T) {
	dir := t.TempDir()
	empty := writeTemp(t, dir, "empty.token", "\n")
	good := writeTemp(t, dir, "agent.token", "agent-secret-0000000001\n")
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"ErrNoToken", nil, []string{"--server", "http://127.0.0.1:8080"}, "set CUSTODY_AGENT_TOKEN, or give --token-file"},
		{"ErrConfigToo", map[string]string{"CUSTODY_AGENT_TOKEN": "x"}, []string{"--server", "http://127.0.0.1:8080", "--config", "custody.json"}, "drop --config"},
		{"ErrDataToo", nil, []string{"--server", "http://127.0.0.1:8080", "--token-file", good, "--data", dir}, "drop --data"},
		{"ErrNotAURL", map[string]string{"CUSTODY_AGENT_TOKEN": "x"}, []string{"--server", "127.0.0.1:8080"}, "give its base URL"},
		{"ErrTokenFileAlone", nil, []string{"--token-file", good}, "--server URL, which is missing"},
		{"ErrEmptyTokenFile", nil, []string{"--server", "http://127.0.0.1:8080", "--token-file", empty}, "does not hold one agent token"},
		{"ErrNoTokenFile", nil, []string{"--server", "http://127.0.0.1:8080", "--token-file", filepath.Join(dir, "none")}, "--token-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runMain(t, tc.env, "", append([]string{"mcp", "--stdio"}, tc.args...)...)
			if code != exitUsage || stdout != "" || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit %d and %q", code, stdout, stderr, exitUsage, tc.want)
			}
		})
	}
}

func TestMCPEndpoint(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080/mcp"},
		{"http://127.0.0.1:8080/", "http://127.0.0.1:8080/mcp"},
		{"http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080/mcp"},
		{"http://127.0.0.1:8080/mcp/", "http://127.0.0.1:8080/mcp"},
		{"https://gw.example.com/custody", "https://gw.example.com/custody/mcp"},
	} {
		if got, err := mcpEndpoint(tc.in); err != nil || got != tc.want {
			t.Errorf("mcpEndpoint(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "127.0.0.1:8080", "ftp://h/", "http:///mcp", "http://h/mcp?x=1"} {
		if got, err := mcpEndpoint(bad); err == nil {
			t.Errorf("mcpEndpoint(%q) = %q, want an error", bad, got)
		}
	}
}

// tsClient is the script the official TypeScript SDK's client runs: it
// launches custody with StdioClientTransport, as Claude Desktop, Cursor
// and VS Code do, and prints what it got.
const tsClient = `
import { pathToFileURL } from "node:url";
const [sdk, bin, server] = process.argv.slice(2);
const { Client } = await import(pathToFileURL(sdk + "/dist/esm/client/index.js").href);
const { StdioClientTransport } = await import(pathToFileURL(sdk + "/dist/esm/client/stdio.js").href);
const transport = new StdioClientTransport({
  command: bin, args: ["mcp", "--stdio", "--server", server],
  env: { CUSTODY_AGENT_TOKEN: process.env.CUSTODY_AGENT_TOKEN }, stderr: "inherit",
});
const client = new Client({ name: "ts-bridge-test", version: "1" });
await client.connect(transport);
const tools = await client.listTools();
const time = await client.callTool({ name: "get_time", arguments: { zone: "UTC" } });
const held = await client.callTool({ name: "post_announcement", arguments: { channel: "ops", message: "DEPLOY AT 5" } });
await client.close();
console.log(JSON.stringify({ tools: tools.tools.map((t) => t.name), time, held }));
`

// TestBridgeTypeScriptClient runs the official TypeScript SDK's client
// on the custody binary, bridged to serve. The SDK comes with the
// reference servers CI installs (CUSTODY_TEST_MCP_SERVERS).
func TestBridgeTypeScriptClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: no TypeScript client to run")
	}
	servers := os.Getenv("CUSTODY_TEST_MCP_SERVERS")
	sdk := filepath.Join(servers, "..", "@modelcontextprotocol", "sdk")
	if _, err := os.Stat(filepath.Join(sdk, "dist", "esm", "client", "stdio.js")); servers == "" || err != nil {
		t.Skip("no @modelcontextprotocol/sdk beside CUSTODY_TEST_MCP_SERVERS (.ci/run installs it with the reference servers)")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "custody")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	data := filepath.Join(dir, "data")
	base, _, stop := startServe(t, nil, "--data", data)
	defer stop()
	script := writeTemp(t, dir, "client.mjs", tsClient)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, sdk, bin, base)
	cmd.Env = append(os.Environ(), "CUSTODY_AGENT_TOKEN="+readToken(t, filepath.Join(data, agentTokenFile)))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	var got struct {
		Tools []string
		Time  struct {
			IsError bool
			Content []struct{ Text string }
		}
		Held struct {
			IsError bool
			Content []struct{ Text string }
			Meta    struct {
				Error struct {
					ID string `json:"approval_request_id"`
				} `json:"custody/error"`
			} `json:"_meta"`
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("the script printed %s: %v", out, err)
	}
	slices.Sort(got.Tools)
	if strings.Join(got.Tools, ",") != "get_time,post_announcement,write_note" || got.Time.IsError || len(got.Time.Content) == 0 {
		t.Errorf("tools %v, get_time %+v", got.Tools, got.Time)
	}
	id := got.Held.Meta.Error.ID
	if !got.Held.IsError || id == "" || len(got.Held.Content) == 0 || !strings.Contains(got.Held.Content[0].Text, base+"/#/approvals/"+id) {
		t.Errorf("the held call: %+v", got.Held)
	}
}
