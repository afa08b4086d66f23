package mcpserver_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/example"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/internal/testclock"
	"github.com/custody-dev/custody/mcpserver"
	"github.com/custody-dev/custody/store/sqlite"
)

// waitEnv serves the example envelope over MCP with post_announcement's
// policy holding a call open for its decision (approvalWait), on a real
// store whose approval changes the waiting calls hear of.
type waitEnv struct {
	db        *sqlite.DB
	clock     *testclock.Clock
	approvals *approval.Service
	url       string
	// requested receives the id of each approval the store creates,
	// decides or uses.
	requested <-chan string
}

func newWaitEnv(t *testing.T) *waitEnv {
	t.Helper()
	e := &waitEnv{clock: testclock.New(time.Now().UTC())}
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
	if e.approvals, err = approval.New(approval.Config{Store: db, Ledger: db, Now: e.clock.Now, Changes: db.ApprovalChanges}); err != nil {
		t.Fatal(err)
	}
	tools := example.Tools(db, e.clock.Now)
	for i := range tools {
		if tools[i].Spec.Name == "post_announcement" {
			tools[i].Spec.ApprovalWait = time.Hour // the test decides; the client's deadline bounds it
		}
	}
	gw, err := gate.New(gate.Config{Registry: reg, Ledger: db, Approvals: e.approvals, State: db, Now: e.clock.Now,
		Logger: slog.New(slog.DiscardHandler)}, example.EnvelopeID, tools)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcpserver.New(gw, reg, mcpserver.Options{ConsoleURL: "https://custody.example"})
	if err != nil {
		t.Fatal(err)
	}
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

// heldCall is a tools/call on its way, with the progress its client was
// told.
type heldCall struct {
	res      chan *mcp.CallToolResult
	err      chan error
	progress chan string
	cancel   context.CancelFunc
}

// callHeld starts a call of post_announcement that asks for progress.
func (e *waitEnv) callHeld(t *testing.T, args string) *heldCall {
	t.Helper()
	h := &heldCall{res: make(chan *mcp.CallToolResult, 1), err: make(chan error, 1), progress: make(chan string, 100)}
	client := mcp.NewClient(&mcp.Implementation{Name: "custody-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			select {
			case h.progress <- r.Params.Message:
			default:
			}
		},
	})
	tr := &mcp.StreamableClientTransport{Endpoint: e.url + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{agentToken, http.DefaultTransport}}, MaxRetries: -1}
	cs, err := client.Connect(t.Context(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	h.cancel = cancel
	t.Cleanup(cancel)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "post_announcement", Arguments: json.RawMessage(args),
			Meta: mcp.Meta{"progressToken": "held-1"}})
		h.res <- res
		h.err <- err
	}()
	return h
}

// held waits until the call is held: its approval is requested and the
// client told it waits, naming the approval and where to decide it.
func (e *waitEnv) held(t *testing.T, h *heldCall) string {
	t.Helper()
	var id string
	select {
	case id = <-e.requested:
	case <-time.After(30 * time.Second):
		t.Fatal("no approval was requested")
	}
	select {
	case msg := <-h.progress:
		if !strings.Contains(msg, "waiting for approval "+id) || !strings.Contains(msg, "https://custody.example/#/approvals/"+id) {
			t.Fatalf("progress %q, want it to name approval %s and the console", msg, id)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the held call sent no progress")
	}
	return id
}

// answer returns the call's result.
func (h *heldCall) answer(t *testing.T) *mcp.CallToolResult {
	t.Helper()
	res, err := <-h.res, <-h.err
	if err != nil {
		t.Fatalf("the held call: %v", err)
	}
	return res
}

// TestHeldCallWaitsForTheDecision: a call of a tool whose policy says
// approvalWait stays open while an operator decides, and the same
// tools/call answers as the decision has it.
func TestHeldCallWaitsForTheDecision(t *testing.T) {
	const args = `{"channel":"general","message":"LUNCH AT NOON"}`
	decide := func(e *waitEnv, id, d string) {
		if _, err := e.approvals.Decide(context.Background(), id, approval.Decision{Decision: d, Operator: "op-1"}); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("Approved", func(t *testing.T) {
		e := newWaitEnv(t)
		h := e.callHeld(t, args)
		decide(e, e.held(t, h), approval.Approve)
		res := h.answer(t)
		if res.IsError || !strings.Contains(text(res), "LUNCH AT NOON") {
			t.Fatalf("the approved call answered %s, want the post", text(res))
		}
		if n := len(entries(t, e.db, custody.Query{Kind: custody.KindCallSucceeded})); n != 1 {
			t.Fatalf("%d call.succeeded entries, want 1", n)
		}
	})
	t.Run("Declined", func(t *testing.T) {
		e := newWaitEnv(t)
		h := e.callHeld(t, args)
		id := e.held(t, h)
		decide(e, id, approval.Decline)
		if d := toolError(t, h.answer(t)); d.Kind != custody.EDENIED || d.ApprovalRequestID != id || !strings.Contains(d.Message, "declined") {
			t.Fatalf("the declined call: %+v, want denied naming %s", d, id)
		}
		if n := len(entries(t, e.db, custody.Query{Kind: custody.KindCallSucceeded})); n != 0 {
			t.Fatalf("a declined call ran")
		}
	})
	t.Run("Expired", func(t *testing.T) {
		e := newWaitEnv(t)
		h := e.callHeld(t, args)
		id := e.held(t, h)
		e.clock.Add(approval.DefaultTTL + time.Second)
		if n, err := e.approvals.ExpireDue(context.Background()); err != nil || n != 1 {
			t.Fatalf("expiry sweep: %d, %v", n, err)
		}
		if d := toolError(t, h.answer(t)); d.Kind != custody.EEXPIRED || !strings.Contains(d.Message, id) {
			t.Fatalf("the expired call: %+v, want expired naming %s", d, id)
		}
	})
	t.Run("ClientCancels", func(t *testing.T) {
		e := newWaitEnv(t)
		h := e.callHeld(t, args)
		id := e.held(t, h)
		h.cancel()
		<-h.res
		if err := <-h.err; err == nil {
			t.Fatal("a cancelled call answered")
		}
		es := waitEntries(t, e.db, custody.Query{Kind: custody.KindCallCancelled})
		if es[0].Refs[approval.RefApproval] != id || !strings.Contains(string(es[0].Body), "LUNCH AT NOON") {
			t.Fatalf("call.cancelled %+v, want the call's arguments and approval %s", es[0], id)
		}
		if a, err := e.approvals.Get(context.Background(), id); err != nil || a.Status != custody.ApprovalPending {
			t.Fatalf("approval after the cancellation: %+v, %v; want still pending for the next call", a, err)
		}
	})
}

// TestHeldCallWithoutWait: a tool whose policy sets no approvalWait
// answers pending_approval at once, as before.
func TestHeldCallWithoutWait(t *testing.T) {
	e := newRefusalEnv(t)
	d := e.refused(t, e.session(t), "post_announcement", `{"channel":"general","message":"LUNCH AT NOON"}`, custody.EPENDING)
	if d.ApprovalRequestID == "" {
		t.Fatalf("pending refusal %+v names no approval", d)
	}
}

// waitEntries returns the entries q matches once there are any: the
// server records a cancelled call after the client has gone.
func waitEntries(t *testing.T, db *sqlite.DB, q custody.Query) []custody.Entry {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if es := entries(t, db, q); len(es) > 0 {
			return es
		}
	}
	t.Fatalf("no %s entry", q.Kind)
	return nil
}
