package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/example"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/internal/gatetest"
	"github.com/custody-dev/custody/internal/testclock"
	"github.com/custody-dev/custody/mcpserver"
	"github.com/custody-dev/custody/store/sqlite"
)

// refusalEnv is the MCP front door over a real SQLite ledger that can be
// made to fail, a settable clock, the example envelope and test tools.
type refusalEnv struct {
	db        *sqlite.DB
	ledger    *gatetest.FlakyLedger
	clock     *testclock.Clock
	approvals *approval.Service
	url       string
	runs      atomic.Int64 // handler runs of the test tools
}

func newRefusalEnv(t *testing.T) *refusalEnv {
	t.Helper()
	e := &refusalEnv{clock: testclock.New(time.Now().UTC())}
	db, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	e.db, e.ledger = db, &gatetest.FlakyLedger{Ledger: db}
	name, raw := example.Contract()
	reg, err := contract.Load(contract.Options{Extra: map[string][]byte{name: raw, gatetest.ContractFile: []byte(gatetest.Contract)}})
	if err != nil {
		t.Fatal(err)
	}
	if e.approvals, err = approval.New(approval.Config{Store: db, Ledger: e.ledger, Now: e.clock.Now}); err != nil {
		t.Fatal(err)
	}
	tools := append(example.Tools(db, e.clock.Now), gatetest.Tools(&e.runs)...)
	gw, err := gate.New(gate.Config{Registry: reg, Ledger: e.ledger, Approvals: e.approvals, State: db, Now: e.clock.Now,
		Logger: slog.New(slog.DiscardHandler)}, example.EnvelopeID, tools)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcpserver.New(gw, reg, mcpserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.HTTPHandler(authAs("agent-9")))
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	e.url = hs.URL
	return e
}

// session opens a new MCP session: each session is its own trace.
func (e *refusalEnv) session(t *testing.T) *mcp.ClientSession {
	t.Helper()
	cs, err := connectHTTP(t, e.url, agentToken)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// refused calls tool and returns its refusal, checking that it is the
// one ledger entry at its receipt and that it holds the exact arguments.
func (e *refusalEnv) refused(t *testing.T, cs *mcp.ClientSession, tool, args, kind string) errorDetail {
	t.Helper()
	d := toolError(t, call(t, cs, tool, json.RawMessage(args)))
	if d.Kind != kind {
		t.Fatalf("%s %s: kind %q (%s), want %q", tool, args, d.Kind, d.Message, kind)
	}
	if d.Receipt == nil {
		t.Fatalf("%s: refusal without a receipt", tool)
	}
	es := entries(t, e.db, custody.Query{After: d.Receipt.Seq - 1, Limit: 1})
	if len(es) != 1 || es[0].Hash != d.Receipt.Hash || es[0].Actor != "agent-9" {
		t.Fatalf("ledger at the receipt: %+v", es)
	}
	if kind != custody.EPENDING && !bytes.Contains(es[0].Body, []byte(args)) {
		t.Errorf("entry %s does not hold the exact arguments %s", es[0].Body, args)
	}
	return d
}

// TestMCPRefusals runs every refusal path of the gateway through a real
// MCP client session, with the ledger checked after each.
func TestMCPRefusals(t *testing.T) {
	e := newRefusalEnv(t)
	t.Run("ErrWrongType", func(t *testing.T) {
		d := e.refused(t, e.session(t), "count_write", `{"n":"seven"}`, custody.EINVALID)
		if len(d.Violations) == 0 || d.Violations[0].Instance != "/n" {
			t.Errorf("violations %+v", d.Violations)
		}
	})
	t.Run("ErrBadFormat", func(t *testing.T) {
		d := e.refused(t, e.session(t), "count_write", `{"n":1,"at":"yesterday"}`, custody.EINVALID)
		if len(d.Violations) == 0 || d.Violations[0].Instance != "/at" {
			t.Errorf("violations %+v", d.Violations)
		}
	})
	t.Run("ErrBudgetExhausted", func(t *testing.T) {
		cs := e.session(t)
		if res := call(t, cs, "once", json.RawMessage(`{"n":1}`)); res.IsError {
			t.Fatalf("first call refused: %s", text(res))
		}
		e.refused(t, cs, "once", `{"n":2}`, custody.EDENIED)
	})
	t.Run("ErrOutputBreach", func(t *testing.T) {
		res := call(t, e.session(t), "bad_output", json.RawMessage(`{"n":1}`))
		d := toolError(t, res)
		if d.Kind != custody.EINTERNAL {
			t.Fatalf("kind %q", d.Kind)
		}
		if bytes.Contains([]byte(text(res)), []byte("s3cr3t")) {
			t.Errorf("the breaching output reached the agent: %s", text(res))
		}
		if es := entries(t, e.db, custody.Query{Kind: custody.KindContractBreach}); len(es) == 0 {
			t.Errorf("no contract.breach entry")
		}
	})
	t.Run("ErrLedgerUnavailable", func(t *testing.T) {
		cs := e.session(t)
		before := e.runs.Load()
		e.ledger.Down.Store(true)
		d := toolError(t, call(t, cs, "count_write", json.RawMessage(`{"n":1}`)))
		e.ledger.Down.Store(false)
		if d.Kind != custody.EUNAVAILABLE || e.runs.Load() != before {
			t.Fatalf("kind %q, handler ran %d times: want unavailable and no run", d.Kind, e.runs.Load()-before)
		}
	})
	e.approvalRefusals(t)
}

// approvalRefusals covers a consequential tool whose approval is missing,
// still pending, declined, expired, replayed or for other arguments.
func (e *refusalEnv) approvalRefusals(t *testing.T) {
	// Each case its own action: an approval serves every session (trace)
	// of the agent that asked, so cases of one action would share it.
	n := 0
	action := func() string {
		n++
		return fmt.Sprintf(`{"channel":"general","message":"SERVER MAINTENANCE %d"}`, n)
	}
	decide := func(t *testing.T, id, decision string) {
		t.Helper()
		if _, err := e.approvals.Decide(t.Context(), id, approval.Decision{Decision: decision, Operator: "op-1"}); err != nil {
			t.Fatalf("decide: %v", err)
		}
	}
	t.Run("PendingThenStillPending", func(t *testing.T) {
		args := action()
		cs := e.session(t)
		first := e.refused(t, cs, "post_announcement", args, custody.EPENDING)
		again := e.refused(t, cs, "post_announcement", args, custody.EPENDING)
		if again.ApprovalRequestID != first.ApprovalRequestID {
			t.Errorf("a second request %s was made for the same action (%s)", again.ApprovalRequestID, first.ApprovalRequestID)
		}
	})
	t.Run("ErrDeclined", func(t *testing.T) {
		args := action()
		cs := e.session(t)
		d := e.refused(t, cs, "post_announcement", args, custody.EPENDING)
		decide(t, d.ApprovalRequestID, approval.Decline)
		e.refused(t, cs, "post_announcement", args, custody.EDENIED)
	})
	t.Run("ErrExpired", func(t *testing.T) {
		args := action()
		cs := e.session(t)
		e.refused(t, cs, "post_announcement", args, custody.EPENDING)
		e.clock.Add(time.Hour)
		e.refused(t, cs, "post_announcement", args, custody.EEXPIRED)
	})
	t.Run("ErrReplayed", func(t *testing.T) {
		args := action()
		cs := e.session(t)
		d := e.refused(t, cs, "post_announcement", args, custody.EPENDING)
		decide(t, d.ApprovalRequestID, approval.Approve)
		if res := call(t, cs, "post_announcement", json.RawMessage(args)); res.IsError {
			t.Fatalf("approved call refused: %s", text(res))
		}
		e.refused(t, cs, "post_announcement", args, custody.ECONFLICT)
	})
	t.Run("ErrOtherArguments", func(t *testing.T) {
		args := action()
		cs := e.session(t)
		d := e.refused(t, cs, "post_announcement", args, custody.EPENDING)
		decide(t, d.ApprovalRequestID, approval.Approve)
		other := e.refused(t, cs, "post_announcement", `{"channel":"general","message":"SOMETHING ELSE"}`, custody.EPENDING)
		if other.ApprovalRequestID == d.ApprovalRequestID {
			t.Errorf("the approval of one action authorised another")
		}
	})
}

// TestMCPApprovalOfAnotherAgent checks that a client naming the trace of
// an approval another agent asked for, in _meta, is denied.
func TestMCPApprovalOfAnotherAgent(t *testing.T) {
	e := newRefusalEnv(t)
	const args = `{"channel":"general","message":"LUNCH AT NOON"}`
	ctx := t.Context()
	a, err := e.approvals.Request(ctx, approval.Request{Tool: "post_announcement", Args: json.RawMessage(args), Trace: "t-bot", Requester: "bot"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.approvals.Decide(ctx, a.ID, approval.Decision{Decision: approval.Approve, Operator: "op-1"}); err != nil {
		t.Fatal(err)
	}
	cs := e.session(t)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "post_announcement", Arguments: json.RawMessage(args),
		Meta: mcp.Meta{mcpserver.TraceMeta: "t-bot"}})
	if err != nil {
		t.Fatal(err)
	}
	if d := toolError(t, res); d.Kind != custody.EDENIED || d.ApprovalRequestID != a.ID {
		t.Fatalf("another agent's call: %+v, want denied naming %s", d, a.ID)
	}
	if got, err := e.approvals.Get(ctx, a.ID); err != nil || got.Status != custody.ApprovalApproved {
		t.Fatalf("approval after the refusal: %+v, %v; want still approved", got, err)
	}
}
