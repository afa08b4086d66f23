package web_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/internal/gatetest"
	"github.com/custody-dev/custody/internal/lockedbuf"
	"github.com/custody-dev/custody/store/sqlite"
	"github.com/custody-dev/custody/web"
)

// TestLedgerServesExactBodies checks that GET /v1/ledger serves each
// body as its stored bytes, so that a client recomputes body_sha256 over
// what it reads: whitespace kept, <, > and & not escaped.
func TestLedgerServesExactBodies(t *testing.T) {
	e := newEnv(t)
	args := "{ \"title\" : \"a <b> & c\",\n  \"text\":\t\"x > y\" }"
	if res := e.call("t-exact", "write_note", args); res.Status != 200 {
		t.Fatalf("call: %d %s", res.Status, res.Body)
	}
	res := e.do("GET", "/v1/ledger?trace=t-exact", auditorToken, nil)
	if res.Status != 200 {
		t.Fatalf("ledger: %d %s", res.Status, res.Body)
	}
	var page struct {
		Entries []struct {
			Body       json.RawMessage `json:"body"`
			BodySHA256 string          `json:"body_sha256"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(res.Body, &page); err != nil || len(page.Entries) == 0 {
		t.Fatalf("page %s: %v", res.Body, err)
	}
	for i, en := range page.Entries {
		sum := sha256.Sum256(en.Body)
		if hex.EncodeToString(sum[:]) != en.BodySHA256 {
			t.Errorf("entry %d: sha256 of the served body %s is not its body_sha256 %s", i, en.Body, en.BodySHA256)
		}
	}
	if !bytes.Contains(res.Body, []byte(args)) {
		t.Errorf("the page does not hold the exact argument bytes %q:\n%s", args, res.Body)
	}
	// The page is the entries the store has, member for member.
	var typed struct {
		Entries []custody.Entry `json:"entries"`
	}
	json.Unmarshal(res.Body, &typed)
	stored := e.entries("t-exact", "")
	if len(typed.Entries) != len(stored) || typed.Entries[0].Hash != stored[0].Hash || typed.Entries[0].Refs == nil {
		t.Errorf("served %+v, stored %+v", typed.Entries, stored)
	}
}

// TestLedgerLastPageHasNoCursor: next_after is there while entries
// follow, and absent on the last page, even one that is exactly full.
func TestLedgerLastPageHasNoCursor(t *testing.T) {
	e := newEnv(t)
	for range 2 {
		if res := e.call("t-page", "get_time", `{}`); res.Status != 200 {
			t.Fatalf("%d %s", res.Status, res.Body)
		}
	}
	n := len(e.entries("", ""))
	if n < 2 {
		t.Fatalf("%d entries", n)
	}
	first := e.do("GET", fmt.Sprintf("/v1/ledger?limit=%d", n-1), auditorToken, nil)
	if !bytes.Contains(first.Body, []byte(fmt.Sprintf(`"next_after":%d`, n-1))) {
		t.Errorf("a page with entries after it has no next_after %d: %s", n-1, first.Body)
	}
	last := e.do("GET", fmt.Sprintf("/v1/ledger?limit=%d", n), auditorToken, nil)
	if last.Status != 200 || bytes.Contains(last.Body, []byte("next_after")) {
		t.Errorf("the last page, exactly full, has a cursor: %d %s", last.Status, last.Body)
	}
}

// TestMetricsToolLabelBounded: only governed tools are label values; a
// caller inventing names cannot add series.
func TestMetricsToolLabelBounded(t *testing.T) {
	e := newEnv(t)
	e.call("t-lbl", "get_time", `{}`)
	series := func() int {
		return strings.Count(string(e.do("GET", "/metrics", "", nil).Body), "custody_calls_total{")
	}
	before := series()
	for i := range 200 {
		e.call("t-lbl", fmt.Sprintf("tool_%d_%x", i, rand.Uint64()), `{}`)
	}
	long := strings.Repeat("x", 5000)
	e.call("t-lbl", long, `{}`)
	body := string(e.do("GET", "/metrics", "", nil).Body)
	if after := series(); after > before+1 {
		t.Errorf("201 invented tool names took the series from %d to %d", before, after)
	}
	if strings.Contains(body, long) || strings.Contains(body, "tool_0_") {
		t.Errorf("an invented tool name is a label value")
	}
	if !strings.Contains(body, `custody_calls_total{tool="unknown",outcome="denied"} 201`) {
		t.Errorf("the calls of unknown tools are not counted as unknown:\n%s", body)
	}
	if !strings.Contains(body, `custody_calls_total{tool="get_time",outcome="ok"} 1`) {
		t.Errorf("a governed tool lost its label:\n%s", body)
	}
}

// TestStrictEnvelope: every JSON body the API reads is refused, 400 with
// what and where, when the ledger's strict checker refuses it, and
// nothing of it runs or reaches the ledger.
func TestStrictEnvelope(t *testing.T) {
	e := newEnv(t)
	id := e.pending("t-strict", `{"channel":"general","message":"HI"}`, custody.EPENDING)
	before := len(e.entries("", ""))
	for _, tc := range []struct {
		name, path, body, want string
	}{
		{"ErrDuplicateTool", "/v1/calls", `{"tool":"get_time","tool":"write_note","arguments":{}}`, `duplicate`},
		{"ErrDuplicateTrace", "/v1/calls", `{"trace_id":"a","tool":"get_time","trace_id":"b","arguments":{}}`, `duplicate`},
		{"ErrUTF8Trace", "/v1/calls", "{\"trace_id\":\"t\xff\",\"tool\":\"get_time\",\"arguments\":{}}", "invalid UTF-8"},
		{"ErrUTF8Tool", "/v1/calls", "{\"tool\":\"get_time\xc3\",\"arguments\":{}}", "invalid UTF-8"},
		{"ErrUTF8Name", "/v1/calls", "{\"tool\":\"get_time\",\"arguments\":{},\"\xfe\":1}", "invalid UTF-8"},
		{"ErrTrailing", "/v1/calls", `{"tool":"get_time","arguments":{}}x`, "unexpected data"},
		{"ErrDecisionDuplicate", "/v1/approvals/" + id + "/decision", `{"decision":"declined","decision":"approved"}`, "duplicate"},
		{"ErrDecisionUTF8", "/v1/approvals/" + id + "/decision", "{\"decision\":\"approved\",\"note\":\"ok\xff\"}", "invalid UTF-8"},
		{"ErrDecisionTrailing", "/v1/approvals/" + id + "/decision", `{"decision":"approved"} {}`, "unexpected data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			token := agentToken
			if strings.Contains(tc.path, "decision") {
				token = operatorToken
			}
			res := e.do("POST", tc.path, token, []byte(tc.body))
			if res.Status != 400 {
				t.Fatalf("status %d: %s", res.Status, res.Body)
			}
			d := res.Error(t)
			if d.Kind != custody.EINVALID || !strings.Contains(d.Message, tc.want) || !strings.Contains(d.Message, "at byte ") {
				t.Errorf("message %q does not say %q and where", d.Message, tc.want)
			}
		})
	}
	if after := len(e.entries("", "")); after != before || e.runs.Load() != 0 {
		t.Errorf("refused bodies left %d entries and %d runs", after-before, e.runs.Load())
	}
}

// TestEscapedMembers: members spelt with escapes read as their values.
func TestEscapedMembers(t *testing.T) {
	e := newEnv(t)
	res := e.do("POST", "/v1/calls", agentToken, []byte(`{"tool":"get\u005ftime","trace_id":"t\u002desc","arguments":{}}`))
	if res.Status != 200 || !bytes.Contains(res.Body, []byte(`"trace_id":"t-esc"`)) {
		t.Fatalf("%d %s", res.Status, res.Body)
	}
}

// TestHTTPConventions covers the answers a REST client expects.
func TestHTTPConventions(t *testing.T) {
	e := newEnv(t)
	t.Run("MethodNotAllowed", func(t *testing.T) {
		for _, tc := range []struct{ method, path, allow string }{
			{"GET", "/v1/calls", "POST"},
			{"DELETE", "/v1/ledger", "GET, HEAD"},
			{"POST", "/v1/approvals/some-id", "GET, HEAD"},
			{"GET", "/v1/approvals/some-id/decision", "POST"},
			{"PUT", "/metrics", "GET, HEAD"},
		} {
			res := e.do(tc.method, tc.path, operatorToken, nil)
			if res.Status != 405 || res.Header.Get("Allow") != tc.allow {
				t.Errorf("%s %s: %d Allow %q, want 405 Allow %q", tc.method, tc.path, res.Status, res.Header.Get("Allow"), tc.allow)
				continue
			}
			res.Error(t)
		}
		if res := e.do("GET", "/v1/nothing", operatorToken, nil); res.Status != 404 {
			t.Errorf("unknown path: %d", res.Status)
		}
	})
	t.Run("UnauthorizedNamesBearer", func(t *testing.T) {
		for _, token := range []string{"", "forged-token-000000000000"} {
			res := e.do("GET", "/v1/ledger", token, nil)
			if res.Status != 401 || !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("token %q: %d WWW-Authenticate %q", token, res.Status, res.Header.Get("WWW-Authenticate"))
			}
		}
	})
	t.Run("UnsupportedMediaType", func(t *testing.T) {
		body := `{"tool":"get_time","arguments":{}}`
		for _, tc := range []struct {
			ct     string
			status int
		}{
			{"application/json", 200},
			{"application/json; charset=utf-8", 200},
			{"Application/JSON; charset=UTF-8", 200},
			{"", 415},
			{"text/plain", 415},
			{"application/x-www-form-urlencoded", 415},
			{"application/json; charset=latin-1", 415},
			{"application/jsonx", 415},
			{"application/json; boundary=x", 415},
			{"application/json; charset", 415},
		} {
			req, _ := http.NewRequest("POST", e.srv.URL+"/v1/calls", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+agentToken)
			if tc.ct != "" {
				req.Header.Set("Content-Type", tc.ct)
			}
			if res := e.send(req); res.Status != tc.status {
				t.Errorf("Content-Type %q: %d, want %d: %s", tc.ct, res.Status, tc.status, res.Body)
			}
		}
	})
	t.Run("PendingLocation", func(t *testing.T) {
		res := e.call("t-loc", "post_announcement", `{"channel":"general","message":"HI"}`)
		id := res.Error(t).ApprovalRequestID
		if res.Status != 202 || res.Header.Get("Location") != "/v1/approvals/"+id {
			t.Fatalf("%d Location %q, want /v1/approvals/%s", res.Status, res.Header.Get("Location"), id)
		}
		if got := e.do("GET", res.Header.Get("Location"), operatorToken, nil); got.Status != 200 || !bytes.Contains(got.Body, []byte(id)) {
			t.Errorf("GET Location: %d %s", got.Status, got.Body)
		}
	})
}

// TestRequestID: a sane X-Request-Id is echoed, any other replaced, and
// the id is on the log lines of the request.
func TestRequestID(t *testing.T) {
	var log lockedbuf.Buffer
	e := newEnvWith(t, func(c *web.Config) { c.Logger = slog.New(slog.NewTextHandler(&log, nil)) })
	get := func(id string) response {
		req, _ := http.NewRequest("GET", e.srv.URL+"/v1/ledger", nil)
		if id != "" {
			req.Header.Set("X-Request-Id", id)
		}
		return e.send(req) // no token: refused and logged
	}
	if got := get("req-42.abc").Header.Get("X-Request-Id"); got != "req-42.abc" {
		t.Errorf("a sane id came back as %q", got)
	}
	if !strings.Contains(log.String(), "request_id=req-42.abc") {
		t.Errorf("the log does not name the request id:\n%s", log.String())
	}
	made := map[string]bool{}
	for _, bad := range []string{"", "has space", strings.Repeat("a", 129), "tab\there", "é"} {
		got := get(bad).Header.Get("X-Request-Id")
		if got == "" || got == bad || made[got] || len(got) > 128 {
			t.Errorf("id %q answered with %q", bad, got)
		}
		made[got] = true
	}
}

// TestBodyTooLarge: a body declared over the cap is refused before it is
// read; one that does not declare its length is read no further than the
// cap. Both answer 413 in the one error shape.
func TestBodyTooLarge(t *testing.T) {
	const cap = 64 << 10
	var read countingListener
	e := newEnvWith(t, func(c *web.Config) { c.MaxBody = cap })
	e.srv.Close()
	e.srv = startCounting(t, e, &read)

	t.Run("Declared", func(t *testing.T) {
		conn := dial(t, e)
		fmt.Fprintf(conn, "POST /v1/calls HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", agentToken, 1<<30)
		res := readResponse(t, conn)
		if res.Status != 413 || res.Error(t).Kind != custody.EINVALID {
			t.Fatalf("%d %s", res.Status, res.Body)
		}
	})
	t.Run("Chunked", func(t *testing.T) {
		read.n.Store(0)
		conn := dial(t, e)
		fmt.Fprintf(conn, "POST /v1/calls HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", agentToken)
		go func() { // an endless body, until the server hangs up
			chunk := fmt.Sprintf("%x\r\n%s\r\n", 4096, strings.Repeat(" ", 4096))
			for {
				if _, err := conn.Write([]byte(chunk)); err != nil {
					return
				}
			}
		}()
		res := readResponse(t, conn)
		if res.Status != 413 || !strings.Contains(res.Error(t).Message, "larger than") {
			t.Fatalf("%d %s", res.Status, res.Body)
		}
		// net/http discards up to 256 KiB more, unbuffered, looking for
		// the body's end before it closes the connection.
		if n := read.n.Load(); n > cap+256<<10+64<<10 {
			t.Errorf("the server read %d bytes of a body capped at %d", n, cap)
		}
	})
}

// TestBodyTrickleCutOff: a client sending its body a byte at a time is
// answered 408 when the body deadline passes, long before it would end.
func TestBodyTrickleCutOff(t *testing.T) {
	e := newEnvWith(t, func(c *web.Config) { c.BodyTimeout = 300 * time.Millisecond })
	conn := dial(t, e)
	body := `{"tool":"get_time","arguments":{}}` + strings.Repeat(" ", 1000)
	fmt.Fprintf(conn, "POST /v1/calls HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", agentToken, len(body))
	done := make(chan struct{})
	go func() { // over 1000 bytes at 20 ms each: 20 s to send it all
		defer close(done)
		for i := range len(body) {
			if _, err := conn.Write([]byte{body[i]}); err != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	res := readResponse(t, conn)
	select {
	case <-done:
		t.Fatalf("the whole body was sent before the answer %d %s", res.Status, res.Body)
	default:
	}
	if res.Status != 408 || !strings.Contains(res.Error(t).Message, "did not arrive") {
		t.Fatalf("%d %s", res.Status, res.Body)
	}
}

// readResponse reads one HTTP answer from conn.
func readResponse(t *testing.T, conn net.Conn) response {
	t.Helper()
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	defer res.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(res.Body)
	return response{Status: res.StatusCode, Body: b.Bytes(), Header: res.Header}
}

// countingListener counts the bytes the server reads from its
// connections.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, n: &l.n}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// startCounting serves e's handler again on a listener counting into l.
func startCounting(t *testing.T, e *env, l *countingListener) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(e.srv.Config.Handler)
	l.Listener = srv.Listener
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// dial opens a raw connection to e's server.
func dial(t *testing.T, e *env) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	return conn
}

// TestCallOutlastsBodyDeadline: the body deadline ends with the body, so
// a call that runs longer than it is neither cancelled (net/http watches
// the connection once a body is read) nor cut off. The deadline is long
// enough for any machine to read a small body within it; the call runs
// past it.
func TestCallOutlastsBodyDeadline(t *testing.T) {
	const bodyDeadline = time.Second
	db, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	reg, err := contract.Load(contract.Options{Extra: map[string][]byte{gatetest.ContractFile: []byte(gatetest.Contract)}})
	if err != nil {
		t.Fatal(err)
	}
	slow := gate.Tool{Spec: custody.ToolSpec{Name: "slow", Description: "slow",
		Input: "https://custody.dev/schemas/gatetest/v1#/$defs/in", Output: "https://custody.dev/schemas/gatetest/v1#/$defs/out",
		Access: custody.Read, Effect: custody.EffectNone, Approval: custody.NotRequired},
		Handler: func(ctx context.Context, _ custody.Call) (json.RawMessage, error) {
			select {
			case <-time.After(bodyDeadline + 200*time.Millisecond):
				return json.RawMessage(`{"ok":true}`), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}}
	approvals, err := approval.New(approval.Config{Store: db, Ledger: db})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gate.New(gate.Config{Registry: reg, Ledger: db, Approvals: approvals, State: db}, "slow-envelope", []gate.Tool{slow})
	if err != nil {
		t.Fatal(err)
	}
	tokens, _ := web.ParseTokens("agent-1:"+agentToken, "", "")
	s, err := web.New(web.Config{Gateway: gw, Approvals: approvals, Ledger: db, Sessions: db, Tokens: tokens, BodyTimeout: bodyDeadline})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	e := &env{t: t, srv: srv}
	if res := e.call("t-slow", "slow", `{"n":1}`); res.Status != 200 {
		t.Fatalf("a call longer than the body deadline: %d %s", res.Status, res.Body)
	}
	// A body of no declared length is read to its end, after which the
	// server watches the connection: the deadline must be gone by then.
	req, _ := http.NewRequest("POST", srv.URL+"/v1/calls", io.NopCloser(strings.NewReader(`{"tool":"slow","arguments":{"n":2}}`)))
	req.Header.Set("Authorization", "Bearer "+agentToken)
	req.Header.Set("Content-Type", "application/json")
	if res := e.send(req); res.Status != 200 {
		t.Fatalf("a chunked call longer than the body deadline: %d %s", res.Status, res.Body)
	}
}

func TestNewRefusesNegativeLimits(t *testing.T) {
	e := newEnv(t)
	tokens, _ := web.ParseTokens("", "", "")
	for _, c := range []web.Config{{MaxBody: -1}, {BodyTimeout: -time.Second}, {EventWriteTimeout: -time.Second}} {
		c.Gateway, c.Approvals, c.Ledger, c.Tokens, c.Sessions = e.gw, e.approvals, e.db, tokens, e.db
		if _, err := web.New(c); err == nil || !strings.Contains(err.Error(), "negative") {
			t.Errorf("web.New(%+v): %v, want a refusal of the negative limit", c, err)
		}
	}
}

// TestMalformedArgumentsRecorded: arguments that are not strict JSON in a
// strict envelope reach the gateway, which refuses them with a ledger
// entry; the same fault in the envelope is refused at the door.
func TestMalformedArgumentsRecorded(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct{ trace, args string }{
		{"t-dup-arg", `{"zone":"UTC","zone":"Europe/Paris"}`},
		{"t-utf8-arg", "{\"zone\":\"UTC\xff\"}"},
		{"t-big-arg", `{"zone":"UTC","n":100000000000000000000}`},
	} {
		res := e.callAs(agentToken, tc.trace, "get_time", tc.args)
		if res.Status != 400 {
			t.Fatalf("%s: %d %s", tc.trace, res.Status, res.Body)
		}
		d := res.Error(t)
		if d.Receipt == nil || !strings.Contains(d.Message, "arguments are not strict JSON") {
			t.Errorf("%s: refused with %+v, want the gateway's refusal with its receipt", tc.trace, d)
		}
		if n := len(e.entries(tc.trace, custody.KindCallRefused)); n != 1 {
			t.Errorf("%s: %d refusals on the ledger, want 1", tc.trace, n)
		}
	}
	before := len(e.entries("", ""))
	for _, body := range []string{
		`{"tool":"get_time","tool":"write_note","arguments":{"a":1,"a":2}}`,
		`{"tool":"get_time","arguments":{"a":1,"a":2},"arguments":{}}`,
		"{\"tool\":\"get_time\xff\",\"arguments\":{\"a\":1,\"a\":2}}",
	} {
		if res := e.do("POST", "/v1/calls", agentToken, []byte(body)); res.Status != 400 || res.Error(t).Receipt != nil {
			t.Errorf("%q: %d %s, want a refusal at the door", body, res.Status, res.Body)
		}
	}
	if after := len(e.entries("", "")); after != before {
		t.Errorf("bad envelopes left %d entries", after-before)
	}
}
