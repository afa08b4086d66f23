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
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/example"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/httpjson"
	"github.com/custody-dev/custody/internal/gatetest"
	"github.com/custody-dev/custody/internal/testclock"
	"github.com/custody-dev/custody/mcpserver"
	"github.com/custody-dev/custody/store/sqlite"
)

// doorEnv is the HTTP door over a real SQLite ledger with opts.
type doorEnv struct {
	st  *stack
	srv *mcpserver.Server
	url string
}

func newDoorEnv(t *testing.T, opts mcpserver.Options) *doorEnv {
	t.Helper()
	st := newStack(t, t.TempDir())
	srv, err := mcpserver.New(st.gw, st.reg, opts)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.HTTPHandler(authAs("agent-7")))
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return &doorEnv{st: st, srv: srv, url: hs.URL}
}

// rawPost posts body to /mcp as an MCP client does, with the given
// session and extra headers (name, value pairs; an empty value removes).
func (e *doorEnv) rawPost(t *testing.T, session, body string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	res, out, err := e.send(session, body, headers...)
	if err != nil {
		t.Fatal(err)
	}
	return res, out
}

// send is rawPost for any goroutine.
func (e *doorEnv) send(session, body string, headers ...string) (*http.Response, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, e.url+"/mcp", strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+agentToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		switch {
		case headers[i] == "Host":
			req.Host = headers[i+1]
		case headers[i+1] == "":
			req.Header.Del(headers[i])
		default:
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	return res, responseOf(res, out), err
}

// responseOf returns the JSON-RPC response of a reply: the body of a
// JSON one, the last message of an event stream.
func responseOf(res *http.Response, body []byte) []byte {
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		return body
	}
	var last []byte
	for _, line := range bytes.Split(body, []byte("\n")) {
		if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			last = data
		}
	}
	return last
}

const getTime = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_time","arguments":{}}}`

const initializeBody = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// initialize opens a session with raw requests and returns its id.
func (e *doorEnv) initialize(t *testing.T) string {
	t.Helper()
	id := e.initializeOnly(t)
	if res, body := e.rawPost(t, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); res.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", res.StatusCode, body)
	}
	return id
}

// initializeOnly opens a session with its initialize request alone: the
// session's last activity is then that request, whose handling ends
// before its answer, where the SDK handles a notification after
// answering it.
func (e *doorEnv) initializeOnly(t *testing.T) string {
	t.Helper()
	res, body := e.rawPost(t, "", initializeBody)
	id := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %s", res.StatusCode, body)
	}
	return id
}

// ping reports the HTTP status of a ping on session id.
func (e *doorEnv) ping(t *testing.T, id string) int {
	t.Helper()
	res, _ := e.rawPost(t, id, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	return res.StatusCode
}

// sdkSessions counts the sessions the SDK's server holds.
func (e *doorEnv) sdkSessions() int {
	n := 0
	for range e.srv.MCP().Sessions() {
		n++
	}
	return n
}

// TestSessionCap opens many sessions with one agent token: the agent
// never holds more than its cap, the least recently active idle sessions
// are the ones evicted, and evicted sessions are gone from the SDK too.
func TestSessionCap(t *testing.T) {
	const maxSessions = 3
	e := newDoorEnv(t, mcpserver.Options{MaxSessionsPerAgent: maxSessions})
	first, err := connectHTTP(t, e.url, agentToken)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer first.Close()
	var ids []string
	for range 40 {
		ids = append(ids, e.initializeOnly(t))
		if all, mine := mcpserver.OpenSessions(e.srv, "agent-7"); all > maxSessions || mine > maxSessions {
			t.Fatalf("after %d sessions: %d counted (%d of agent-7), cap %d", len(ids)+1, all, mine, maxSessions)
		}
	}
	// The SDK lets go of a closed session once its connection is done.
	waitFor(t, 10*time.Second, func() bool { return e.sdkSessions() == maxSessions }, "the SDK holds the cap's sessions only")
	for i, id := range ids {
		want := http.StatusNotFound
		if i >= len(ids)-maxSessions {
			want = http.StatusOK
		}
		if got := e.ping(t, id); got != want {
			t.Errorf("session %d of %d: ping status %d, want %d", i+1, len(ids), got, want)
		}
	}
	if _, err := first.ListTools(t.Context(), nil); err == nil {
		t.Errorf("the first, least recently active session still works")
	}
}

// TestSessionIdleTimeout checks that a session idle for its timeout is
// closed and forgotten, while a request, whether the SDK answers it (a
// ping) or the door does (a tools/call), starts its session's idle time
// again. The idle timers run on a fake clock, which moves only when the
// test moves it.
func TestSessionIdleTimeout(t *testing.T) {
	const idle = 30 * time.Minute
	clock := testclock.New(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	fired := 0 // timers fire within clock.Add, on the test's goroutine
	e := newDoorEnv(t, mcpserver.Options{SessionIdleTimeout: idle,
		AfterFunc: func(d time.Duration, f func()) mcpserver.IdleTimer {
			return clock.AfterFunc(d, func() { fired++; f() })
		}})
	// Each session's last activity is its initialize request, over
	// before its answer: its timer is due idle from now.
	quiet, busy, calling := e.initializeOnly(t), e.initializeOnly(t), e.initializeOnly(t)
	use := func() {
		t.Helper()
		if got := e.ping(t, busy); got != http.StatusOK {
			t.Fatalf("the busy session: ping status %d", got)
		}
		if res, body := e.rawPost(t, calling, getTime); res.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"result"`)) {
			t.Fatalf("the calling session: %d %s", res.StatusCode, body)
		}
		// Both requests have ended, and armed their sessions' timers,
		// before the clock moves on.
		waitFor(t, 10*time.Second, func() bool { return mcpserver.RequestsInFlight(e.srv) == 0 }, "no request in flight")
	}
	open := func(want int, what string) {
		t.Helper()
		waitFor(t, 10*time.Second, func() bool {
			all, _ := mcpserver.OpenSessions(e.srv, "agent-7")
			return all == want && e.sdkSessions() == want
		}, what)
	}

	clock.Add(idle / 2)
	use() // busy and calling are due at 1.5 idle, quiet still at idle
	clock.Add(idle / 2)
	if fired != 1 {
		t.Fatalf("%d idle timers fired at the quiet session's timeout, want its alone", fired)
	}
	open(2, "the quiet session closed and forgotten after its timeout, the two in use open")
	if got := e.ping(t, quiet); got != http.StatusNotFound {
		t.Errorf("the idle session: ping status %d, want 404", got)
	}
	use() // due at 2 idle
	clock.Add(idle / 2)
	use() // due at 2.5 idle, past the timeouts of their earlier requests
	clock.Add(idle - time.Nanosecond)
	if fired != 1 {
		t.Fatalf("%d idle timers fired a moment before the timeout of the last requests, want the quiet one's alone", fired)
	}
	clock.Add(time.Nanosecond)
	if fired != 3 {
		t.Fatalf("%d idle timers fired at the timeout of the last requests, want 3", fired)
	}
	open(0, "every session closed and forgotten after its timeout")
	if got := e.ping(t, busy); got != http.StatusNotFound {
		t.Errorf("the busy session, idle since: ping status %d, want 404", got)
	}
	if res, body := e.rawPost(t, calling, getTime); res.StatusCode != http.StatusNotFound {
		t.Errorf("the calling session, idle since: %d %s, want 404", res.StatusCode, body)
	}
}

func waitFor(t *testing.T, limit time.Duration, cond func() bool, what string) {
	t.Helper()
	for end := time.Now().Add(limit); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("not within %v: %s", limit, what)
		}
	}
}

// TestStrictEnvelope posts malformed JSON-RPC bodies on a real go-sdk
// session: each is refused with -32700 before the SDK decodes it, and
// nothing runs.
func TestStrictEnvelope(t *testing.T) {
	e := newDoorEnv(t, mcpserver.Options{})
	cs, err := connectHTTP(t, e.url, agentToken)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	id := cs.ID()
	const dupName = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_time","name":"write_note","arguments":{"title":"t","text":"x"}}}`
	for _, tt := range []struct{ name, body, want string }{
		{"DuplicateMember", dupName, `duplicate`},
		{"DuplicateInBatch", "[" + dupName + "]", `duplicate`},
		{"DuplicateMethod", `{"jsonrpc":"2.0","id":7,"method":"ping","method":"tools/call","params":{"name":"write_note","arguments":{"title":"t","text":"x"}}}`, `duplicate`},
		{"InvalidUTF8", "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"write_note\xff\",\"arguments\":{\"title\":\"t\",\"text\":\"x\"}}}", `UTF-8`},
		{"TrailingData", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"write_note","arguments":{"title":"t","text":"x"}}} {"jsonrpc":"2.0","id":8,"method":"ping"}`, `unexpected data`},
		{"Empty", ``, `byte 0`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, body := e.rawPost(t, id, tt.body)
			var msg struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(body, &msg); err != nil {
				t.Fatalf("status %d, body %s: %v", res.StatusCode, body, err)
			}
			if res.StatusCode != http.StatusBadRequest || msg.JSONRPC != "2.0" || string(msg.ID) != "null" || msg.Error.Code != -32700 {
				t.Fatalf("status %d, body %s: want 400 and a parse error", res.StatusCode, body)
			}
			if !strings.Contains(msg.Error.Message, tt.want) || !strings.Contains(msg.Error.Message, "at byte") {
				t.Errorf("message %q does not say what (%s) and where", msg.Error.Message, tt.want)
			}
		})
	}
	if es := entries(t, e.st.db, custody.Query{}); len(es) != 0 {
		t.Fatalf("refused bodies reached the gateway: %d ledger entries, first %s", len(es), es[0].Body)
	}
	res := call(t, cs, "get_time", json.RawMessage(`{}`))
	if res.IsError {
		t.Fatalf("the session after the refusals: %s", text(res))
	}
}

// TestMalformedArgumentsRecorded: arguments that are not strict JSON in a
// strict envelope reach the gateway, which refuses them on the ledger, as
// on /v1: the two doors agree.
func TestMalformedArgumentsRecorded(t *testing.T) {
	e := newDoorEnv(t, mcpserver.Options{})
	cs, err := connectHTTP(t, e.url, agentToken)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	for i, args := range []string{`{"title":"t","title":"u","text":"x"}`, "{\"title\":\"t\xff\",\"text\":\"x\"}"} {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"write_note","arguments":%s}}`, 20+i, args)
		res, out := e.rawPost(t, cs.ID(), body)
		if res.StatusCode != http.StatusOK || !strings.Contains(string(out), "not strict JSON") || !strings.Contains(string(out), `"isError":true`) {
			t.Errorf("%q: %d %s, want the gateway's refusal as a tool error", args, res.StatusCode, out)
		}
	}
	refused := entries(t, e.st.db, custody.Query{Kind: custody.KindCallRefused})
	if len(refused) != 2 {
		t.Fatalf("%d refusals on the ledger, want 2", len(refused))
	}
	if es := entries(t, e.st.db, custody.Query{Kind: custody.KindCallSucceeded}); len(es) != 0 {
		t.Fatalf("a malformed call ran: %s", es[0].Body)
	}
}

// TestOrigin checks /mcp against browser origins: none, the server's own
// and a configured one pass; any other is refused with 403 in the one
// error shape, for every method.
func TestOrigin(t *testing.T) {
	e := newDoorEnv(t, mcpserver.Options{AllowedOrigins: []string{"https://console.example.com"}})
	for _, tt := range []struct {
		origin string
		ok     bool
	}{
		{"", true},
		{e.url, true},
		{"https://Console.Example.com", true},
		{"https://evil.example", false},
		{"http://127.0.0.1:1", false},
		{"null", false},
		{"https://console.example.com.evil.example", false},
	} {
		res, body := e.rawPost(t, "", initializeBody, "Origin", tt.origin)
		if tt.ok {
			if res.StatusCode != http.StatusOK {
				t.Errorf("Origin %q: status %d %s, want 200", tt.origin, res.StatusCode, body)
			}
			continue
		}
		d := oneErrorShape(t, res, body, http.StatusForbidden)
		if d.Kind != custody.EDENIED || !strings.Contains(d.Message, tt.origin) {
			t.Errorf("Origin %q: %+v", tt.origin, d)
		}
	}
	id := e.initialize(t)
	req, _ := http.NewRequest(http.MethodGet, e.url+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+agentToken)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Origin", "https://evil.example")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("GET from another origin: status %d, want 403", res.StatusCode)
	}
}

// TestAuthErrorShape checks that /mcp refuses a missing, unknown or
// wrong-role token in the one error shape of /v1, with
// WWW-Authenticate: Bearer on 401, and that nothing is recorded.
func TestAuthErrorShape(t *testing.T) {
	e := newDoorEnv(t, mcpserver.Options{})
	for _, tt := range []struct {
		name, auth string
		status     int
		kind       string
	}{
		{"None", "", http.StatusUnauthorized, custody.EUNAUTHORIZED},
		{"NotBearer", "Basic " + agentToken, http.StatusUnauthorized, custody.EUNAUTHORIZED},
		{"Unknown", "Bearer not-a-token-0123456789", http.StatusUnauthorized, custody.EUNAUTHORIZED},
		{"OperatorRole", "Bearer " + operatorToken, http.StatusForbidden, custody.EDENIED},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, body := e.rawPost(t, "", initializeBody, "Authorization", tt.auth)
			d := oneErrorShape(t, res, body, tt.status)
			if d.Kind != tt.kind || d.Message == "" {
				t.Errorf("error %+v, want kind %s", d, tt.kind)
			}
			wantAuth := ""
			if tt.status == http.StatusUnauthorized {
				wantAuth = "Bearer"
			}
			if got := res.Header.Get("WWW-Authenticate"); got != wantAuth {
				t.Errorf("WWW-Authenticate %q, want %q", got, wantAuth)
			}
		})
	}
	if es := entries(t, e.st.db, custody.Query{}); len(es) != 0 {
		t.Errorf("%d ledger entries", len(es))
	}
}

// oneErrorShape checks that res is custody's one error shape, exactly,
// with status, and returns its detail.
func oneErrorShape(t *testing.T, res *http.Response, body []byte, status int) custody.ErrorDetail {
	t.Helper()
	if res.StatusCode != status || res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, content type %q, body %s: want %d and JSON", res.StatusCode, res.Header.Get("Content-Type"), body, status)
	}
	var eb httpjson.ErrorBody
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&eb); err != nil {
		t.Fatalf("body %s is not the one error shape: %v", body, err)
	}
	if want, _ := json.Marshal(eb); !bytes.Equal(bytes.TrimSpace(body), want) {
		t.Fatalf("body %s is not exactly %s", body, want)
	}
	return eb.Error
}

// TestSessionCapAllBusy fills an agent's cap with sessions that each have
// a call in flight: a new session is refused with a JSON-RPC error saying
// why, none is evicted mid-call, and once the calls end a new session
// gets in.
func TestSessionCapAllBusy(t *testing.T) {
	const maxSessions = 2
	entered, release := make(chan struct{}, maxSessions), make(chan struct{})
	e := newHoldEnv(t, mcpserver.Options{MaxSessionsPerAgent: maxSessions}, entered, release)
	held := make(chan string, maxSessions)
	for range maxSessions {
		id := e.initialize(t)
		go func() {
			_, body, err := e.send(id, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"hold","arguments":{"n":1}}}`)
			if err != nil {
				body = []byte(err.Error())
			}
			held <- string(body)
		}()
	}
	for range maxSessions {
		<-entered
	}
	res, body := e.rawPost(t, "", initializeBody)
	var msg struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &msg); err != nil || msg.Error.Code != mcpserver.CodeSessionLimit || !strings.Contains(msg.Error.Message, "all busy") {
		t.Errorf("initialize beyond a busy cap: %d %s, want error %d", res.StatusCode, body, mcpserver.CodeSessionLimit)
	}
	if all, _ := mcpserver.OpenSessions(e.srv, "agent-7"); all != maxSessions {
		t.Errorf("%d sessions counted, want %d", all, maxSessions)
	}
	close(release)
	for range maxSessions {
		if out := <-held; !strings.Contains(out, `"result"`) || strings.Contains(out, `"isError":true`) {
			t.Errorf("a held call: %s", out)
		}
	}
	e.initialize(t)
	waitFor(t, 10*time.Second, func() bool { return e.sdkSessions() == maxSessions }, "the SDK holds the cap's sessions only")
}

// newHoldEnv is the HTTP door with the example envelope and "hold", a
// READ tool whose calls signal entered and wait for release.
func newHoldEnv(t *testing.T, opts mcpserver.Options, entered chan<- struct{}, release <-chan struct{}) *doorEnv {
	t.Helper()
	db, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	name, raw := example.Contract()
	reg, err := contract.Load(contract.Options{Extra: map[string][]byte{name: raw, gatetest.ContractFile: []byte(gatetest.Contract)}})
	if err != nil {
		t.Fatal(err)
	}
	approvals, err := approval.New(approval.Config{Store: db, Ledger: db})
	if err != nil {
		t.Fatal(err)
	}
	hold := gate.Tool{Spec: custody.ToolSpec{Name: "hold", Description: "waits",
		Input: "https://custody.dev/schemas/gatetest/v1#/$defs/in", Output: "https://custody.dev/schemas/gatetest/v1#/$defs/out",
		Access: custody.Read, Effect: custody.EffectNone, Approval: custody.NotRequired,
	}, Handler: func(ctx context.Context, _ custody.Call) (json.RawMessage, error) {
		entered <- struct{}{}
		select {
		case <-release:
			return json.RawMessage(`{"ok":true}`), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
	gw, err := gate.New(gate.Config{Registry: reg, Ledger: db, Approvals: approvals, State: db,
		Logger: slog.New(slog.DiscardHandler)}, example.EnvelopeID, append(example.Tools(db, nil), hold))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcpserver.New(gw, reg, opts)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.HTTPHandler(authAs("agent-7")))
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return &doorEnv{srv: srv, url: hs.URL}
}

// TestCaseFoldedMembers: members that a case-insensitive decoder would
// read as another (the SDK's and the fast path's decoder both do, the
// last one winning) are refused: "METHOD" after "method" must not turn a
// ping into a tools/call, nor "NAME" choose another tool.
func TestCaseFoldedMembers(t *testing.T) {
	e := newDoorEnv(t, mcpserver.Options{})
	cs, err := connectHTTP(t, e.url, agentToken)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"ping","METHOD":"tools/call","params":{"name":"write_note","arguments":{"title":"t","text":"x"}}}`,
		`{"jsonrpc":"2.0","id":7,"Method":"tools/call","params":{"name":"write_note","arguments":{"title":"t","text":"x"}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_time","NAME":"write_note","arguments":{"title":"t","text":"x"}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_time","argumentſ":{"zone":"UTC"}}}`,
		`[{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"Name":"write_note","arguments":{}}}]`,
	} {
		res, out := e.rawPost(t, cs.ID(), body)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(out), "-32600") {
			t.Errorf("%s: %d %s, want 400 and an invalid request", body, res.StatusCode, out)
		}
	}
	if es := entries(t, e.st.db, custody.Query{}); len(es) != 0 {
		t.Fatalf("refused messages reached the gateway: %d entries, first %s", len(es), es[0].Body)
	}
	if res := call(t, cs, "get_time", json.RawMessage(`{}`)); res.IsError {
		t.Fatalf("a plain call after the refusals: %s", text(res))
	}
}
