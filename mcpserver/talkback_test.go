//lint:file-ignore SA1019 roots, sampling and logging are deprecated by SEP-2577 and still relayed for the clients and servers that use them.
package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/mcpserver"
	"github.com/custody-dev/custody/store/sqlite"
	"github.com/custody-dev/custody/upstream"
)

// workServer is an upstream whose tools talk back while they run: work
// sends three progress notifications and two log messages, ask samples
// the client's model, confirm elicits from the user, roots lists the
// client's roots. seen records what the server was given.
type workServer struct {
	srv *mcp.Server
	mu  sync.Mutex
	// tokens are the progress tokens work was called with; caps the
	// client capabilities custody declared.
	tokens []any
	caps   *mcp.ClientCapabilities
	// heard, when set, is waited on after each progress notification,
	// as a long-running tool's work takes time between them.
	heard chan struct{}
	// logsHeard, when set, is how many log messages the client must hear
	// (on heardLogs) before work answers.
	logsHeard atomic.Int32
	heardLogs chan struct{}
}

func newWorkServer() *workServer {
	w := &workServer{srv: mcp.NewServer(&mcp.Implementation{Name: "work", Version: "1"}, nil), heardLogs: make(chan struct{}, 16)}
	obj := json.RawMessage(`{"type":"object"}`)
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	w.srv.AddTool(&mcp.Tool{Name: "work", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		w.mu.Lock()
		w.tokens = append(w.tokens, req.Params.GetProgressToken())
		w.caps = req.Session.InitializeParams().Capabilities
		w.mu.Unlock()
		for i := 1; i <= 3; i++ {
			if tok := req.Params.GetProgressToken(); tok != nil {
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 3}); err != nil {
					return nil, err
				}
				if w.heard != nil {
					select {
					case <-w.heard:
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				}
			}
		}
		req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "working"})
		req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "debug", Logger: "inner", Data: "below the level"})
		req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "warning", Logger: "inner", Data: "done"})
		// As a tool that works on between its messages, wait until the
		// client heard the two at its level.
		for range w.logsHeard.Load() {
			select {
			case <-w.heardLogs:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return text("worked"), nil
	})
	w.srv.AddTool(&mcp.Tool{Name: "burst", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// Progress sent back to back, the answer right after it.
		for i := 1; i <= burstSteps; i++ {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Total: burstSteps}); err != nil {
				return nil, err
			}
		}
		return text("burst done"), nil
	})
	w.srv.AddTool(&mcp.Tool{Name: "ask", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		w.mu.Lock()
		w.caps = req.Session.InitializeParams().Capabilities
		w.mu.Unlock()
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "name a colour"}}}})
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "sampling: " + err.Error()}}}, nil
		}
		return text("model said " + res.Content.(*mcp.TextContent).Text), nil
	})
	w.srv.AddTool(&mcp.Tool{Name: "confirm", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Your name?",
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)})
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "elicitation: " + err.Error()}}}, nil
		}
		return text(res.Action + " " + res.Content["name"].(string)), nil
	})
	w.srv.AddTool(&mcp.Tool{Name: "big", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ N int }
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return nil, err
			}
			return text(strings.Repeat("x", args.N)), nil
		})
	w.srv.AddTool(&mcp.Tool{Name: "roots", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "roots: " + err.Error()}}}, nil
		}
		var uris []string
		for _, r := range res.Roots {
			uris = append(uris, r.URI)
		}
		return text(strings.Join(uris, ",")), nil
	})
	return w
}

// talkEnv is custody in front of two workServers: "work", allowed
// sampling and elicitation, and "mute", allowed neither; a go-sdk client
// with handlers for each on custody's HTTP door.
type talkEnv struct {
	db *sqlite.DB
	// url is the door's /mcp; client a session on it.
	url              string
	client           *mcp.ClientSession
	work, mute       *workServer
	progress, logged chan string
	heardProgress    chan struct{}
	// wire is what the door sent the client.
	wire wireLog
	// srv is the door's server, built of gw, reg and relay.
	srv   *mcpserver.Server
	gw    *gate.Gateway
	reg   *contract.Registry
	relay *upstream.Relay
}

func newTalkEnv(t *testing.T) *talkEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e := &talkEnv{work: newWorkServer(), mute: newWorkServer(), progress: make(chan string, 16), logged: make(chan string, 16),
		heardProgress: make(chan struct{}, 16)}
	serve := func(w *workServer) string {
		up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return w.srv }, nil))
		t.Cleanup(func() { up.CloseClientConnections(); up.Close() })
		return up.URL
	}
	policy := upstream.Policy{Access: custody.Read, Effect: custody.EffectNone, Approval: custody.NotRequired}
	set, err := upstream.Open(ctx, upstream.Config{
		Servers: []upstream.Server{
			{Name: "work", URL: serve(e.work), ClientFeatures: []string{upstream.FeatureSampling, upstream.FeatureElicitation}},
			{Name: "mute", URL: serve(e.mute)},
		},
		Governance: upstream.Governance{"*": policy, "mute__big": {Access: custody.Read, Effect: custody.EffectNone,
			Approval: custody.NotRequired, MaxResultBytes: 1024}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	if e.db, err = sqlite.Open(ctx, t.TempDir(), sqlite.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.db.Close() })
	cs, err := set.Contracts()
	if err != nil {
		t.Fatal(err)
	}
	reg, err := contract.Load(contract.Options{Extra: cs})
	if err != nil {
		t.Fatal(err)
	}
	approvals, err := approval.New(approval.Config{Store: e.db, Ledger: e.db})
	if err != nil {
		t.Fatal(err)
	}
	pins := upstream.NewPins(e.db, e.db, approvals)
	tools, err := set.Tools(ctx, pins)
	if err != nil {
		t.Fatal(err)
	}
	gcfg := gate.Config{Registry: reg, Ledger: e.db, Approvals: approvals, State: e.db, Logger: slog.New(slog.DiscardHandler)}
	gw, err := gate.New(gcfg, "talk-test", tools)
	if err != nil {
		t.Fatal(err)
	}
	relay, err := set.Relay(ctx, gcfg, pins)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcpserver.New(gw, reg, mcpserver.Options{Relay: relay})
	if err != nil {
		t.Fatal(err)
	}
	e.srv, e.gw, e.reg, e.relay = srv, gw, reg, relay
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.HTTPHandler(authAs("agent-7")))
	door := httptest.NewServer(mux)
	t.Cleanup(door.Close)
	e.url = door.URL + "/mcp"
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			e.progress <- jsonOf(t, r.Params)
			e.heardProgress <- struct{}{}
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			e.logged <- r.Params.Logger + ": " + jsonOf(t, r.Params.Data)
			select {
			case e.work.heardLogs <- struct{}{}:
			default:
			}
		},
		CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m-1", Role: "assistant", Content: &mcp.TextContent{Text: "teal"}}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada-secret-answer"}}, nil
		},
	})
	client.AddRoots(&mcp.Root{URI: "file:///home/ada/project", Name: "project"})
	hc := &http.Client{Transport: bearer{token: agentToken, next: &e.wire}}
	if e.client, err = client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: door.URL + "/mcp", HTTPClient: hc, MaxRetries: -1},
		// Servers ask clients on the versions before 2026-07-28.
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.client.Close() })
	return e
}

// burstSteps is how many progress notifications the burst tool sends.
const burstSteps = 8

// wireLog is a transport that keeps what the door sent the client, in
// the order it came: the bodies of its answers, as read.
type wireLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *wireLog) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(resp.Body, l), resp.Body}
	}
	return resp, err
}

func (l *wireLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *wireLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestProgressBeforeTheAnswerOnTheWire: the progress an HTTP server sends
// right before its answer goes to the client before the answer, on the
// call's stream, every step of it, although the SDK hands custody the
// server's notifications apart from its answers.
func TestProgressBeforeTheAnswerOnTheWire(t *testing.T) {
	e := newTalkEnv(t)
	stop := make(chan struct{})
	defer close(stop)
	go func() { // the client's handler is not held up
		for {
			select {
			case <-e.progress:
			case <-e.heardProgress:
			case <-stop:
				return
			}
		}
	}()
	for round := range 5 {
		if got := e.call(t, "work__burst", mcp.Meta{"progressToken": fmt.Sprint("b-", round)}); got != "burst done" {
			t.Fatalf("burst = %q", got)
		}
		wire := e.wire.String()
		end := strings.LastIndex(wire, "burst done")
		start := strings.Index(wire, fmt.Sprintf(`"progressToken":"b-%d"`, round))
		if start < 0 || end < start {
			t.Fatalf("round %d: no progress before the answer on the wire", round)
		}
		if n := strings.Count(wire[start:end], `"method":"notifications/progress"`); n != burstSteps-1 {
			t.Fatalf("round %d: %d progress notifications between the first and the answer, want %d", round, n, burstSteps-1)
		}
	}
}

func jsonOf(t *testing.T, v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		t.Error(err)
	}
	return string(raw)
}

// call calls tool and returns its text; a failed call fails the test.
func (e *talkEnv) call(t *testing.T, tool string, meta mcp.Meta) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := e.client.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}, Meta: meta})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if len(res.Content) == 0 {
		t.Fatalf("%s: no content", tool)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// entries returns the entries of kind whose tool is tool.
func (e *talkEnv) entries(t *testing.T, kind, tool string) []custody.Entry {
	t.Helper()
	es, err := e.db.Entries(context.Background(), custody.Query{Kind: kind})
	if err != nil {
		t.Fatal(err)
	}
	var out []custody.Entry
	for _, en := range es {
		var body struct {
			Tool string `json:"tool"`
		}
		json.Unmarshal(en.Body, &body)
		if body.Tool == tool {
			out = append(out, en)
		}
	}
	return out
}

func TestProgressReachesTheClientUnderItsToken(t *testing.T) {
	e := newTalkEnv(t)
	// The client tells the tool it heard each notification, as a
	// long-running tool's work takes time between them: what the server
	// sends right before its response may follow the response, since the
	// SDK hands notifications to custody apart from responses.
	e.work.heard = e.heardProgress
	if got := e.call(t, "work__work", mcp.Meta{"progressToken": "p-1"}); got != "worked" {
		t.Fatalf("work = %q", got)
	}
	for i := 1; i <= 3; i++ {
		select {
		case p := <-e.progress:
			if !strings.Contains(p, `"progressToken":"p-1"`) || !strings.Contains(p, `"progress":`+string(rune('0'+i))) {
				t.Errorf("progress %d = %s", i, p)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("progress notification %d did not arrive", i)
		}
	}
	e.work.mu.Lock()
	defer e.work.mu.Unlock()
	if tok, _ := e.work.tokens[0].(string); !strings.HasPrefix(tok, "custody-") {
		t.Errorf("the server was given the token %v: custody gives it a token of its own", e.work.tokens[0])
	}
	// A call that asks for no progress gives the server no token.
	e.work.mu.Unlock()
	e.call(t, "work__work", nil)
	e.work.mu.Lock()
	if len(e.work.tokens) != 2 || e.work.tokens[1] != nil {
		t.Errorf("tokens = %v", e.work.tokens)
	}
}

func TestLogMessagesReachTheClientAtItsLevel(t *testing.T) {
	e := newTalkEnv(t)
	e.work.logsHeard.Store(2)
	ctx := context.Background()
	if err := e.client.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	e.call(t, "work__work", mcp.Meta{"progressToken": 7})
	var got []string
	for len(got) < 2 {
		select {
		case l := <-e.logged:
			got = append(got, l)
		case <-time.After(30 * time.Second):
			t.Fatalf("log messages: %q, want two", got)
		}
	}
	if got[0] != `work: "working"` || got[1] != `work/inner: "done"` {
		t.Errorf("log messages %q", got)
	}
	select {
	case l := <-e.logged:
		t.Errorf("a message below the level came: %q", l)
	default:
	}
}

func TestSamplingIsRelayedAndRecorded(t *testing.T) {
	e := newTalkEnv(t)
	if got := e.call(t, "work__ask", nil); got != "model said teal" {
		t.Fatalf("ask = %q", got)
	}
	es := e.entries(t, custody.KindCallSucceeded, "client/sampling:work")
	if len(es) != 1 {
		t.Fatalf("%d sampling entries, want 1", len(es))
	}
	if es[0].Actor != "agent-7" || !strings.Contains(string(es[0].Body), "name a colour") || strings.Contains(string(es[0].Body), "teal") {
		t.Errorf("sampling entry: actor %q body %s (the request is recorded, the answer only as its digest)", es[0].Actor, es[0].Body)
	}
	e.work.mu.Lock()
	caps := e.work.caps
	e.work.mu.Unlock()
	if caps == nil || caps.Sampling == nil || caps.Elicitation == nil {
		t.Errorf("custody declared %+v to a server allowed sampling and elicitation", caps)
	}
}

func TestSamplingNotAllowedIsRefused(t *testing.T) {
	e := newTalkEnv(t)
	// The server asks all the same: custody refuses, on the ledger.
	got := e.call(t, "mute__ask", nil)
	if !strings.HasPrefix(got, "sampling: ") || !strings.Contains(got, `denied: tool "client/sampling:mute" is not in the envelope`) {
		t.Fatalf("ask on a server not allowed sampling = %q", got)
	}
	if es := e.entries(t, custody.KindCallRefused, "client/sampling:mute"); len(es) != 1 || es[0].Actor != "agent-7" {
		t.Errorf("%d refusals of client/sampling:mute, want 1 by agent-7", len(es))
	}
	e.mute.mu.Lock()
	caps := e.mute.caps
	e.mute.mu.Unlock()
	if caps == nil || caps.Sampling != nil || caps.Elicitation != nil || caps.RootsV2 == nil {
		t.Errorf("custody declared %+v to a server allowed only roots", caps)
	}
}

func TestElicitationAnswerIsRecordedAsItsDigest(t *testing.T) {
	e := newTalkEnv(t)
	if got := e.call(t, "work__confirm", nil); got != "accept Ada-secret-answer" {
		t.Fatalf("confirm = %q", got)
	}
	es := e.entries(t, custody.KindCallSucceeded, "client/elicitation:work")
	if len(es) != 1 {
		t.Fatalf("%d elicitation entries, want 1", len(es))
	}
	body := string(es[0].Body)
	if strings.Contains(body, "Ada-secret-answer") || !strings.Contains(body, `"action":"accept"`) || !strings.Contains(body, "Your name?") {
		t.Errorf("elicitation entry %s: the question and the action, the answer only as its digest", body)
	}
}

func TestRootsAreTheCallingClients(t *testing.T) {
	e := newTalkEnv(t)
	if got := e.call(t, "mute__roots", nil); got != "file:///home/ada/project" {
		t.Fatalf("roots = %q", got)
	}
	if es := e.entries(t, custody.KindCallSucceeded, "client/roots:mute"); len(es) != 1 {
		t.Fatalf("%d roots entries, want 1", len(es))
	}
}

func TestResultOverMaxResultBytesIsRefused(t *testing.T) {
	e := newTalkEnv(t)
	ctx := context.Background()
	for _, c := range []struct {
		tool string
		n    int
		want string
	}{
		{"mute__big", 900, ""},
		{"mute__big", 2000, "over the 1024 bytes its policy allows"},
		{"work__big", upstream.DefaultMaxResultBytes + 1, "over the 4194304 bytes its policy allows"},
	} {
		res, err := e.client.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: map[string]any{"n": c.n}})
		if err != nil {
			t.Fatalf("%s %d: %v", c.tool, c.n, err)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		switch {
		case c.want == "" && (res.IsError || len(text) != c.n):
			t.Errorf("%s %d: refused or cut: %.200s", c.tool, c.n, text)
		case c.want != "" && (!res.IsError || !strings.Contains(text, c.want)):
			t.Errorf("%s %d: %.300s, want a refusal saying %q", c.tool, c.n, text, c.want)
		}
	}
	if es := e.entries(t, custody.KindCallFailed, "mute__big"); len(es) != 1 {
		t.Errorf("%d call.failed entries of mute__big, want 1", len(es))
	}
}
