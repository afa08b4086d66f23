package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
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

// elicitEnv serves the example envelope over MCP, post_announcement's
// policy naming the given approvers and approvalWait, on a real store.
type elicitEnv struct {
	srv       *mcpserver.Server
	db        *sqlite.DB
	approvals *approval.Service
	url       string
	requested <-chan string
}

func newElicitEnv(t *testing.T, approvers []string, wait time.Duration) *elicitEnv {
	t.Helper()
	e := &elicitEnv{}
	db, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	e.db = db
	name, raw := example.Contract()
	reg, err := contract.Load(contract.Options{Extra: map[string][]byte{name: raw}})
	if err != nil {
		t.Fatal(err)
	}
	if e.approvals, err = approval.New(approval.Config{Store: db, Ledger: db, Changes: db.ApprovalChanges}); err != nil {
		t.Fatal(err)
	}
	tools := example.Tools(db, nil)
	for i := range tools {
		if tools[i].Spec.Name == "post_announcement" {
			tools[i].Spec.Approvers, tools[i].Spec.ApprovalWait = approvers, wait
		}
	}
	gw, err := gate.New(gate.Config{Registry: reg, Ledger: db, Approvals: e.approvals, State: db,
		Logger: slog.New(slog.DiscardHandler)}, example.EnvelopeID, tools)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcpserver.New(gw, reg, mcpserver.Options{ConsoleURL: "https://custody.example"})
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	if e.requested, err = db.ApprovalChanges(t.Context()); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.HTTPHandler(authAs("agent-9")))
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	e.url = hs.URL
	return e
}

// elicitor is a client's user: each form it is shown is noted, and
// answered by answer (nil: no elicitation handler, so no capability).
type elicitor struct {
	answer func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
	caps   *mcp.ClientCapabilities

	mu    sync.Mutex
	asked []*mcp.ElicitParams
}

func (u *elicitor) forms() []*mcp.ElicitParams {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]*mcp.ElicitParams(nil), u.asked...)
}

// answering is an elicitor that answers every form with action and, on
// accept, the decision.
func answering(action, decision string) *elicitor {
	return &elicitor{answer: func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		res := &mcp.ElicitResult{Action: action}
		if action == "accept" {
			res.Content = map[string]any{mcpserver.DecisionField: decision}
		}
		return res, nil
	}}
}

// connectStdio opens a session over stdio (custody mcp --stdio) in
// protocol version, with u as the user of the client.
func (e *elicitEnv) connectStdio(t *testing.T, u *elicitor, version string) *mcp.ClientSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.srv.ServeStdio(ctx, inR, outW)
		outW.Close()
	}()
	t.Cleanup(func() { inW.Close(); cancel(); <-done })
	return e.connectOn(t, u, &mcp.IOTransport{Reader: outR, Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: version})
}

// connect opens a session of the client named "elicit-test" 3.1 with u as
// its user.
func (e *elicitEnv) connect(t *testing.T, u *elicitor) *mcp.ClientSession {
	t.Helper()
	return e.connectOn(t, u, &mcp.StreamableClientTransport{Endpoint: e.url + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{agentToken, http.DefaultTransport}}, MaxRetries: -1}, nil)
}

// connectOn opens a session on tr with sopts, with u as the user of the
// client.
func (e *elicitEnv) connectOn(t *testing.T, u *elicitor, tr mcp.Transport, sopts *mcp.ClientSessionOptions) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{Capabilities: u.caps}
	if u.answer != nil {
		opts.ElicitationHandler = func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			u.mu.Lock()
			u.asked = append(u.asked, r.Params)
			u.mu.Unlock()
			return u.answer(ctx, r.Params)
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "elicit-test", Version: "3.1"}, opts)
	cs, err := client.Connect(t.Context(), tr, sopts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

const elicitAnnouncement = `{"channel":"general","message":"LUNCH AT NOON"}`

// postHeld calls post_announcement and returns its answer.
func postHeld(t *testing.T, cs *mcp.ClientSession) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "post_announcement", Arguments: json.RawMessage(elicitAnnouncement)})
	if err != nil {
		t.Fatalf("post_announcement: %v", err)
	}
	return res
}

// decision returns the one approval.decided entry and its body.
func (e *elicitEnv) decision(t *testing.T) (custody.Entry, map[string]any) {
	t.Helper()
	es := entries(t, e.db, custody.Query{Kind: custody.KindApprovalDecided})
	if len(es) != 1 {
		t.Fatalf("%d approval.decided entries, want 1", len(es))
	}
	var body map[string]any
	if err := json.Unmarshal(es[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	return es[0], body
}

// TestElicitationApproval: a held call of a tool whose approvers name the
// client is put to a client that declared elicitation, as a form showing
// the exact action; its user's answer decides it, recorded as
// client:AGENT with the client's name and version, and the same
// tools/call answers as decided.
func TestElicitationApproval(t *testing.T) {
	both := []string{custody.ApproverConsole, custody.ApproverClient}
	t.Run("Approves", func(t *testing.T) {
		e := newElicitEnv(t, both, 0)
		u := answering("accept", mcpserver.DecisionApprove)
		res := postHeld(t, e.connect(t, u))
		if res.IsError || !strings.Contains(text(res), "LUNCH AT NOON") {
			t.Fatalf("the call approved in the client answered %s, want the post", text(res))
		}
		forms := u.forms()
		if len(forms) != 1 || forms[0].Mode != "form" {
			t.Fatalf("forms shown: %+v, want one in form mode", forms)
		}
		for _, want := range []string{"Tool: post_announcement", "Agent: agent-9", `"message": "LUNCH AT NOON"`} {
			if !strings.Contains(forms[0].Message, want) {
				t.Errorf("the form does not show %q:\n%s", want, forms[0].Message)
			}
		}
		schema, _ := json.Marshal(forms[0].RequestedSchema)
		if !strings.Contains(string(schema), `"enum":["approve","decline"]`) {
			t.Errorf("requested schema %s, want an approve/decline choice", schema)
		}
		en, body := e.decision(t)
		client, _ := body["client"].(map[string]any)
		if en.Actor != "client:agent-9" || body["decision"] != approval.Approve || client["name"] != "elicit-test" || client["version"] != "3.1" {
			t.Fatalf("approval.decided by %s: %s", en.Actor, en.Body)
		}
		if n := len(entries(t, e.db, custody.Query{Kind: custody.KindCallSucceeded})); n != 1 {
			t.Fatalf("%d call.succeeded entries, want 1", n)
		}
	})
	for _, tc := range []struct{ name, action, decision string }{
		{"Declines", "accept", mcpserver.DecisionDecline},
		{"DeclinesTheForm", "decline", ""},
		{"DismissesTheForm", "cancel", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newElicitEnv(t, both, 0)
			u := answering(tc.action, tc.decision)
			d := toolError(t, postHeld(t, e.connect(t, u)))
			if d.Kind != custody.EDENIED || d.ApprovalRequestID == "" || !strings.Contains(d.Message, "declined") {
				t.Fatalf("the call declined in the client: %+v, want denied naming the approval", d)
			}
			if en, body := e.decision(t); en.Actor != "client:agent-9" || body["decision"] != approval.Decline {
				t.Fatalf("approval.decided by %s: %s", en.Actor, en.Body)
			}
			if n := len(entries(t, e.db, custody.Query{Kind: custody.KindCallSucceeded})); n != 0 {
				t.Fatal("a call declined in the client ran")
			}
		})
	}
	t.Run("ConsoleDecidesFirst", func(t *testing.T) {
		e := newElicitEnv(t, both, 0)
		withdrawn := make(chan struct{})
		u := &elicitor{answer: func(ctx context.Context, _ *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			<-ctx.Done() // the user has not answered when the operator does
			close(withdrawn)
			return nil, ctx.Err()
		}}
		cs := e.connect(t, u)
		go func() {
			id := <-e.requested
			for len(u.forms()) == 0 {
				time.Sleep(5 * time.Millisecond)
			}
			e.approvals.Decide(context.Background(), id, approval.Decision{Decision: approval.Approve, Operator: "op-1"})
		}()
		if res := postHeld(t, cs); res.IsError || !strings.Contains(text(res), "LUNCH AT NOON") {
			t.Fatalf("the call approved in the console answered %s, want the post", text(res))
		}
		select {
		case <-withdrawn:
		case <-time.After(30 * time.Second):
			t.Fatal("the form was not withdrawn once the operator decided")
		}
		if en, _ := e.decision(t); en.Actor != "op-1" {
			t.Fatalf("approval.decided by %s, want the operator", en.Actor)
		}
	})
}

// TestElicitationOverStdio: over stdio (custody mcp --stdio) a client of
// protocol 2025-11-25 is sent elicitation/create while its call waits; one
// of 2026-07-28, where a server sends no requests while it serves one, is
// asked through the call's result (inputRequests) and brings the answer
// back with the call again, which then answers as decided. Either way an
// operator who decides first is the one whose decision stands.
func TestElicitationOverStdio(t *testing.T) {
	both := []string{custody.ApproverConsole, custody.ApproverClient}
	for _, v := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(v, func(t *testing.T) {
			t.Run("Approves", func(t *testing.T) {
				e := newElicitEnv(t, both, 0)
				u := answering("accept", mcpserver.DecisionApprove)
				cs := e.connectStdio(t, u, v)
				if got := cs.InitializeResult().ProtocolVersion; got != v {
					t.Fatalf("negotiated %s, want %s", got, v)
				}
				if res := postHeld(t, cs); res.IsError || len(u.forms()) != 1 || !strings.Contains(text(res), "LUNCH AT NOON") {
					t.Fatalf("approved in the client: %s, asked %d times", text(res), len(u.forms()))
				}
				if !strings.Contains(u.forms()[0].Message, `"message": "LUNCH AT NOON"`) {
					t.Errorf("the form does not show the arguments:\n%s", u.forms()[0].Message)
				}
				en, body := e.decision(t)
				if client, _ := body["client"].(map[string]any); en.Actor != "client:mcp-stdio" || client["name"] != "elicit-test" {
					t.Fatalf("approval.decided by %s: %s", en.Actor, en.Body)
				}
				if n := len(entries(t, e.db, custody.Query{Kind: custody.KindCallSucceeded})); n != 1 {
					t.Fatalf("%d call.succeeded entries, want 1", n)
				}
			})
			t.Run("Declines", func(t *testing.T) {
				e := newElicitEnv(t, both, 0)
				d := toolError(t, postHeld(t, e.connectStdio(t, answering("decline", ""), v)))
				if d.Kind != custody.EDENIED {
					t.Fatalf("declined in the client: %+v", d)
				}
				if en, body := e.decision(t); en.Actor != "client:mcp-stdio" || body["decision"] != approval.Decline {
					t.Fatalf("approval.decided by %s: %s", en.Actor, en.Body)
				}
			})
			t.Run("ConsoleDecidesFirst", func(t *testing.T) {
				e := newElicitEnv(t, both, 0)
				id := make(chan string, 1)
				go func() { id <- <-e.requested }()
				// The user approves only once an operator has declined.
				u := &elicitor{answer: func(ctx context.Context, _ *mcp.ElicitParams) (*mcp.ElicitResult, error) {
					if _, err := e.approvals.Decide(ctx, <-id, approval.Decision{Decision: approval.Decline, Operator: "op-1"}); err != nil {
						return nil, err
					}
					if v < "2026-07-28" {
						<-ctx.Done() // withdrawn
						return nil, ctx.Err()
					}
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{mcpserver.DecisionField: mcpserver.DecisionApprove}}, nil
				}}
				if d := toolError(t, postHeld(t, e.connectStdio(t, u, v))); d.Kind != custody.EDENIED {
					t.Fatalf("declined in the console first: %+v", d)
				}
				if en, _ := e.decision(t); en.Actor != "op-1" {
					t.Fatalf("approval.decided by %s, want the operator's alone", en.Actor)
				}
			})
		})
	}
}

// TestElicitationNeverAsked: a client is never asked where it may not be:
// a client without the elicitation capability, one that elicits by URL
// only, a tool whose approvers do not name the client. The call is held
// as without it.
func TestElicitationNeverAsked(t *testing.T) {
	both := []string{custody.ApproverConsole, custody.ApproverClient}
	urlOnly := answering("accept", mcpserver.DecisionApprove)
	urlOnly.caps = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}
	for _, tc := range []struct {
		name      string
		approvers []string
		user      *elicitor
	}{
		{"NoCapability", both, &elicitor{}},
		{"URLOnly", both, urlOnly},
		{"ToolWithoutClient", []string{custody.ApproverConsole}, answering("accept", mcpserver.DecisionApprove)},
		{"ToolWithoutApprovers", nil, answering("accept", mcpserver.DecisionApprove)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newElicitEnv(t, tc.approvers, 0)
			d := toolError(t, postHeld(t, e.connect(t, tc.user)))
			if d.Kind != custody.EPENDING || d.ApprovalRequestID == "" {
				t.Fatalf("the call answered %+v, want pending_approval at once", d)
			}
			if n := len(tc.user.forms()); n != 0 {
				t.Fatalf("the client was asked %d times", n)
			}
			if n := len(entries(t, e.db, custody.Query{Kind: custody.KindApprovalDecided})); n != 0 {
				t.Fatalf("%d decisions, want the approval left to an operator", n)
			}
		})
	}
}

// TestElicitationFails: a client whose form fails is left as without it:
// held at once without approvalWait; with it, the call waits on for the
// console's decision.
func TestElicitationFails(t *testing.T) {
	both := []string{custody.ApproverConsole, custody.ApproverClient}
	failing := func() *elicitor {
		return &elicitor{answer: func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			return nil, &userAway{"the user is away"}
		}}
	}
	t.Run("WithoutWait", func(t *testing.T) {
		e := newElicitEnv(t, both, 0)
		u := failing()
		if d := toolError(t, postHeld(t, e.connect(t, u))); d.Kind != custody.EPENDING || len(u.forms()) != 1 {
			t.Fatalf("after a failed form: %+v, asked %d times; want pending_approval", d, len(u.forms()))
		}
	})
	t.Run("WithWait", func(t *testing.T) {
		e := newElicitEnv(t, both, time.Hour)
		u := failing()
		cs := e.connect(t, u)
		go func() {
			id := <-e.requested
			for len(u.forms()) == 0 {
				time.Sleep(5 * time.Millisecond)
			}
			e.approvals.Decide(context.Background(), id, approval.Decision{Decision: approval.Approve, Operator: "op-1"})
		}()
		if res := postHeld(t, cs); res.IsError {
			t.Fatalf("approved in the console after a failed form: %s", text(res))
		}
	})
}

// userAway is an elicitation handler's failure.
type userAway struct{ msg string }

func (e *userAway) Error() string { return e.msg }
