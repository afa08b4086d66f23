package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/example"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/mcpserver"
	"github.com/custody-dev/custody/store/sqlite"
)

// stdioEnv names the data directory when the test binary is re-executed as
// an MCP stdio server.
const stdioEnv = "CUSTODY_TEST_MCP_STDIO_DIR"

const (
	agentToken    = "agent-token-0123456789"
	operatorToken = "operator-token-0123456789"
)

// authAs accepts agentToken as actor's and refuses operatorToken as a
// token of a role that may not use MCP, as serve does.
func authAs(actor string) func(token string) (string, error) {
	return func(token string) (string, error) {
		switch token {
		case agentToken:
			return actor, nil
		case operatorToken:
			return "", custody.Errorf(custody.EDENIED, "the operator role may not use MCP")
		}
		return "", custody.Errorf(custody.EUNAUTHORIZED, "a valid bearer token is required")
	}
}

// TestMain turns the test binary into "custody mcp --stdio" when asked, so
// the stdio transport is tested against a real subprocess.
func TestMain(m *testing.M) {
	if dir := os.Getenv(stdioEnv); dir != "" {
		os.Exit(serveStdio(dir))
	}
	os.Exit(m.Run())
}

func serveStdio(dir string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	st, err := openStack(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer st.db.Close()
	srv, err := mcpserver.New(st.gw, st.reg, mcpserver.Options{Actor: "stdio-agent"})
	if err == nil {
		err = srv.ServeStdio(ctx, os.Stdin, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// stack is a gateway over a real SQLite data directory with the example
// envelope.
type stack struct {
	db        *sqlite.DB
	reg       *contract.Registry
	approvals *approval.Service
	gw        *gate.Gateway
}

func openStack(dir string) (*stack, error) {
	db, err := sqlite.Open(context.Background(), dir, sqlite.Options{})
	if err != nil {
		return nil, err
	}
	name, raw := example.Contract()
	reg, err := contract.Load(contract.Options{Extra: map[string][]byte{name: raw}})
	if err != nil {
		return nil, err
	}
	approvals, err := approval.New(approval.Config{Store: db, Ledger: db})
	if err != nil {
		return nil, err
	}
	gw, err := gate.New(gate.Config{Registry: reg, Ledger: db, Approvals: approvals, State: db,
		Logger: slog.New(slog.DiscardHandler)}, example.EnvelopeID, example.Tools(db, nil))
	if err != nil {
		return nil, err
	}
	return &stack{db: db, reg: reg, approvals: approvals, gw: gw}, nil
}

func newStack(t testing.TB, dir string) *stack {
	t.Helper()
	st, err := openStack(dir)
	if err != nil {
		t.Fatalf("open stack: %v", err)
	}
	t.Cleanup(func() { st.db.Close() })
	return st
}

// bearer adds a bearer token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// serveHTTP serves the MCP handler on 127.0.0.1 and accepts agentToken only.
func serveHTTP(t *testing.T, st *stack) *httptest.Server {
	t.Helper()
	srv, err := mcpserver.New(st.gw, st.reg, mcpserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.HTTPHandler(authAs("agent-7")))
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return hs
}

func connectHTTP(t *testing.T, url, token string) (*mcp.ClientSession, error) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "custody-test", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{
		Endpoint:   url + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}},
		MaxRetries: -1,
	}
	return client.Connect(t.Context(), tr, nil)
}

func TestHTTP(t *testing.T) {
	st := newStack(t, t.TempDir())
	hs := serveHTTP(t, st)
	cs, err := connectHTTP(t, hs.URL, agentToken)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	exercise(t, cs, st.db, "agent-7")

	t.Run("ApprovedRetrySameSession", func(t *testing.T) {
		args := json.RawMessage(`{"channel":"ops","message":"DEPLOY AT NOON"}`)
		res := call(t, cs, "post_announcement", args)
		d := toolError(t, res)
		if d.Kind != custody.EPENDING {
			t.Fatalf("first call: %+v", d)
		}
		if _, err := st.approvals.Decide(t.Context(), d.ApprovalRequestID,
			approval.Decision{Decision: approval.Approve, Operator: "op-1"}); err != nil {
			t.Fatalf("approve: %v", err)
		}
		res = call(t, cs, "post_announcement", args)
		if res.IsError {
			t.Fatalf("approved call refused: %s", text(res))
		}
		if !strings.Contains(text(res), "DEPLOY AT NOON") {
			t.Errorf("output %s", text(res))
		}
	})
}

func TestHTTPAuth(t *testing.T) {
	st := newStack(t, t.TempDir())
	hs := serveHTTP(t, st)
	for _, tok := range []string{"", operatorToken} {
		if cs, err := connectHTTP(t, hs.URL, tok); err == nil {
			cs.Close()
			t.Errorf("token %q: connected", tok)
		}
	}
	res, err := http.Post(hs.URL+"/mcp", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: status %d", res.StatusCode)
	}
	if n := entries(t, st.db, custody.Query{}); len(n) != 0 {
		t.Errorf("%d ledger entries", len(n))
	}
}

// TestStdio runs the MCP server as a subprocess on stdin and stdout, as
// custody mcp --stdio does.
func TestStdio(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), stdioEnv+"="+dir)
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "custody-test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	exercise(t, cs, dirLedger(dir), "stdio-agent")
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

// dirLedger reads the ledger of the subprocess's data directory, opening
// it afresh for every read so that each read sees the other process's
// latest appends.
type dirLedger string

func (dir dirLedger) Entries(ctx context.Context, q custody.Query) ([]custody.Entry, error) {
	db, err := sqlite.Open(context.Background(), string(dir), sqlite.Options{})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return db.Entries(ctx, q)
}

type entryReader interface {
	Entries(ctx context.Context, q custody.Query) ([]custody.Entry, error)
}

// exercise runs the checks every transport must pass.
func exercise(t *testing.T, cs *mcp.ClientSession, led entryReader, actor string) {
	t.Run("ListTools", func(t *testing.T) {
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]*mcp.Tool{}
		for _, tool := range res.Tools {
			got[tool.Name] = tool
		}
		w, ok := got["write_note"]
		if len(got) != 3 || !ok || got["get_time"] == nil || got["post_announcement"] == nil {
			t.Fatalf("tools %v", got)
		}
		schema, _ := json.Marshal(w.InputSchema)
		for _, want := range []string{`"additionalProperties":false`, `"required":["title","text"]`, `"type":"object"`} {
			if !strings.Contains(string(schema), want) {
				t.Errorf("input schema lacks %s: %s", want, schema)
			}
		}
		if w.OutputSchema == nil || w.Description == "" {
			t.Errorf("write_note: output schema %v, description %q", w.OutputSchema, w.Description)
		}
	})

	t.Run("OK", func(t *testing.T) {
		res := call(t, cs, "write_note", json.RawMessage(`{"title":"t","text":"hello"}`))
		if res.IsError {
			t.Fatalf("refused: %s", text(res))
		}
		var out struct {
			NoteID string `json:"note_id"`
		}
		if err := json.Unmarshal([]byte(text(res)), &out); err != nil || out.NoteID == "" {
			t.Fatalf("output %s: %v", text(res), err)
		}
		sc, _ := json.Marshal(res.StructuredContent)
		if !strings.Contains(string(sc), out.NoteID) {
			t.Errorf("structured content %s", sc)
		}
	})

	t.Run("ErrExtraField", func(t *testing.T) {
		args := `{"title":"t","text":"x","extra":1}`
		res := call(t, cs, "write_note", json.RawMessage(args))
		d := toolError(t, res)
		if d.Kind != custody.EINVALID || len(d.Violations) == 0 || d.Receipt == nil {
			t.Fatalf("error %+v", d)
		}
		if !strings.Contains(text(res), "invalid:") || !strings.Contains(text(res), "refused, not repaired") {
			t.Errorf("text %q", text(res))
		}
		es := entries(t, led, custody.Query{After: d.Receipt.Seq - 1, Limit: 1})
		if len(es) != 1 || es[0].Kind != custody.KindCallRefused || es[0].Actor != actor {
			t.Fatalf("ledger %+v", es)
		}
		if !bytes.Contains(es[0].Body, []byte(args)) {
			t.Errorf("entry body %s does not hold the exact bytes %s", es[0].Body, args)
		}
	})

	t.Run("Pending", func(t *testing.T) {
		res := call(t, cs, "post_announcement", json.RawMessage(`{"channel":"general","message":"HELLO"}`))
		d := toolError(t, res)
		if d.Kind != custody.EPENDING || d.ApprovalRequestID == "" || d.ExpiresAt == "" || d.TraceID == "" {
			t.Fatalf("error %+v", d)
		}
		txt := text(res)
		for _, want := range []string{"pending_approval", d.ApprovalRequestID, "expires_at", "exactly the same arguments"} {
			if !strings.Contains(txt, want) {
				t.Errorf("text lacks %q: %s", want, txt)
			}
		}
		es := entries(t, led, custody.Query{Trace: d.TraceID, Kind: custody.KindApprovalRequest})
		if len(es) != 1 || es[0].Refs[approval.RefApproval] != d.ApprovalRequestID {
			t.Errorf("approval requests %+v", es)
		}
	})

	t.Run("ErrUnknownTool", func(t *testing.T) {
		res := call(t, cs, "rm_rf", json.RawMessage(`{"path":"/"}`))
		d := toolError(t, res)
		if d.Kind != custody.EDENIED || d.Receipt == nil {
			t.Fatalf("error %+v", d)
		}
		es := entries(t, led, custody.Query{After: d.Receipt.Seq - 1, Limit: 1})
		if len(es) != 1 || es[0].Kind != custody.KindCallRefused || !bytes.Contains(es[0].Body, []byte(`"rm_rf"`)) {
			t.Fatalf("ledger %+v", es)
		}
	})
}

func call(t *testing.T, cs *mcp.ClientSession, tool string, args json.RawMessage) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

type errorDetail struct {
	Kind              string              `json:"kind"`
	Message           string              `json:"message"`
	Violations        []custody.Violation `json:"violations"`
	ApprovalRequestID string              `json:"approval_request_id"`
	ExpiresAt         string              `json:"expires_at"`
	TraceID           string              `json:"trace_id"`
	Receipt           *custody.Receipt    `json:"receipt"`
}

// toolError returns the refusal of a tool error result. Tools with an
// output schema carry it in the text only; the kind and ids are parsed
// from there, the rest from structured content when present.
func toolError(t *testing.T, res *mcp.CallToolResult) errorDetail {
	t.Helper()
	if !res.IsError {
		t.Fatalf("not a tool error: %s", text(res))
	}
	var d errorDetail
	if res.StructuredContent != nil {
		raw, _ := json.Marshal(res.StructuredContent)
		var b struct {
			Error errorDetail `json:"error"`
		}
		if err := json.Unmarshal(raw, &b); err != nil {
			t.Fatalf("structured content %s: %v", raw, err)
		}
		return b.Error
	}
	var meta struct {
		Error errorDetail `json:"custody/error"`
	}
	raw, _ := json.Marshal(res.Meta)
	if err := json.Unmarshal(raw, &meta); err != nil || meta.Error.Kind == "" {
		t.Fatalf("no error detail in %s: %s", raw, text(res))
	}
	d = meta.Error
	return d
}

func entries(t *testing.T, led entryReader, q custody.Query) []custody.Entry {
	t.Helper()
	es, err := led.Entries(t.Context(), q)
	if err != nil {
		t.Fatalf("read ledger: %v", err)
	}
	return es
}
