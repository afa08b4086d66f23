package gate_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/example"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/store/sqlite"
)

// editContract declares edit_file, a tool that edits a file the way the
// reference filesystem server's edit_file does.
const editContract = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$id": "https://custody.dev/schemas/gate-edit-test/v1",
  "$defs": {
    "edit_args": {"type": "object", "additionalProperties": false, "required": ["path", "edits"],
      "properties": {"path": {"type": "string"}, "edits": {"type": "array", "items": {"type": "object",
        "additionalProperties": false, "required": ["oldText", "newText"],
        "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}}}}}},
    "edit_result": {"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}}
  }
}`

const editArgs = `{"path":"notes/plan.md","edits":[{"oldText":"# Plan\nship on friday\nthen rest\n","newText":"# Plan\nship on monday\nthen rest\n"}]}`

// clientEnv is a gateway whose edit_file names the client among its
// approvers, beside the example envelope, whose post_announcement does not.
type clientEnv struct {
	db  *sqlite.DB
	svc *approval.Service
	gw  *gate.Gateway
	// edits counts the runs of edit_file.
	mu    sync.Mutex
	edits int
}

func newClientEnv(t *testing.T) *clientEnv {
	t.Helper()
	e := &clientEnv{}
	db, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	e.db = db
	name, ex := example.Contract()
	reg, err := contract.Load(contract.Options{Extra: map[string][]byte{name: ex, "gate-edit-test.json": []byte(editContract)}})
	if err != nil {
		t.Fatal(err)
	}
	validate := func(ctx context.Context, a custody.Approval) error { return e.gw.CheckApproval(ctx, a) }
	if e.svc, err = approval.New(approval.Config{Store: db, Ledger: db, Validate: validate, Changes: db.ApprovalChanges}); err != nil {
		t.Fatal(err)
	}
	edit := gate.Tool{Spec: custody.ToolSpec{Name: "edit_file", Description: "Edit a file.",
		Input:  "https://custody.dev/schemas/gate-edit-test/v1#/$defs/edit_args",
		Output: "https://custody.dev/schemas/gate-edit-test/v1#/$defs/edit_result",
		Access: custody.Write, Effect: custody.EffectConsequential, Approval: custody.HumanConfirmation,
		Approvers: []string{custody.ApproverConsole, custody.ApproverClient},
	}, Handler: func(context.Context, custody.Call) (json.RawMessage, error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.edits++
		return json.RawMessage(`{"ok":true}`), nil
	}}
	if e.gw, err = gate.New(gate.Config{Registry: reg, Ledger: db, Approvals: e.svc, State: db, Logger: discard()},
		example.EnvelopeID, append(example.Tools(db, nil), edit)); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *clientEnv) ran() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.edits
}

// held makes call, which is held, and returns its approval and refusal.
func (e *clientEnv) held(t *testing.T, call custody.Call) (string, error) {
	t.Helper()
	_, err := e.gw.Call(context.Background(), call)
	id, _ := e.gw.Held(call, err)
	if id == "" {
		t.Fatalf("Held(%v) names no approval", err)
	}
	return id, err
}

// decided returns the approval.decided entries and their bodies.
func (e *clientEnv) decided(t *testing.T) ([]custody.Entry, []map[string]any) {
	t.Helper()
	es, err := e.db.Entries(context.Background(), custody.Query{Kind: custody.KindApprovalDecided})
	if err != nil {
		t.Fatal(err)
	}
	bodies := make([]map[string]any, len(es))
	for i, en := range es {
		if err := json.Unmarshal(en.Body, &bodies[i]); err != nil {
			t.Fatal(err)
		}
	}
	return es, bodies
}

// asker is a ClientApproval's Ask that answers verdict (or fails with
// err), noting each question.
type asker struct {
	verdict string
	err     error
	mu      sync.Mutex
	asked   []gate.ClientQuestion
}

func (a *asker) approval(within time.Duration) gate.ClientApproval {
	return gate.ClientApproval{Name: "test-client", Version: "4.2", Within: within,
		Ask: func(_ context.Context, q gate.ClientQuestion) (string, error) {
			a.mu.Lock()
			defer a.mu.Unlock()
			a.asked = append(a.asked, q)
			return a.verdict, a.err
		}}
}

func (a *asker) questions() []gate.ClientQuestion {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]gate.ClientQuestion(nil), a.asked...)
}

var editCall = custody.Call{Trace: "t-client", Tool: "edit_file", Args: json.RawMessage(editArgs), Actor: "agent-1", Via: "test"}

// TestClientApproval covers the rule of an approval in the MCP client:
// the user's answer is decided through the one decision path as
// client:AGENT with the client named, and the held call answers as
// decided; a tool that does not name the client, or a question that
// fails, is as without it; an operator may decide first.
func TestClientApproval(t *testing.T) {
	ctx := context.Background()
	t.Run("Approves", func(t *testing.T) {
		e := newClientEnv(t)
		id, held := e.held(t, editCall)
		ask := &asker{verdict: approval.Approve}
		res, err := e.gw.AwaitClientDecision(ctx, editCall, id, 0, held, ask.approval(0))
		if err != nil || e.ran() != 1 || string(res.Output) != `{"ok":true}` {
			t.Fatalf("the approved call: %+v, %v; ran %d times", res, err, e.ran())
		}
		qs := ask.questions()
		if len(qs) != 1 || qs[0].Approval.ID != id {
			t.Fatalf("asked %+v, want approval %s once", qs, id)
		}
		for _, want := range []string{"Tool: edit_file", "Agent: agent-1", "Approval: " + id, `"path": "notes/plan.md"`,
			`"oldText": "# Plan\nship on friday\nthen rest\n"`, "- ship on friday\n+ ship on monday\n"} {
			if !strings.Contains(qs[0].Message, want) {
				t.Errorf("the question does not show %q:\n%s", want, qs[0].Message)
			}
		}
		es, bodies := e.decided(t)
		if len(es) != 1 || es[0].Actor != "client:agent-1" || bodies[0]["decision"] != approval.Approve {
			t.Fatalf("approval.decided: %+v", es)
		}
		if c, _ := bodies[0]["client"].(map[string]any); c["name"] != "test-client" || c["version"] != "4.2" {
			t.Fatalf("the decision names client %v, want test-client 4.2", bodies[0]["client"])
		}
	})
	t.Run("Declines", func(t *testing.T) {
		e := newClientEnv(t)
		id, held := e.held(t, editCall)
		_, err := e.gw.AwaitClientDecision(ctx, editCall, id, 0, held, (&asker{verdict: approval.Decline}).approval(0))
		if custody.ErrorKind(err) != custody.EDENIED || custody.AsError(err).ApprovalRequestID != id || e.ran() != 0 {
			t.Fatalf("the declined call: %v; ran %d times", err, e.ran())
		}
		if es, bodies := e.decided(t); len(es) != 1 || es[0].Actor != "client:agent-1" || bodies[0]["decision"] != approval.Decline {
			t.Fatalf("approval.decided: %+v", es)
		}
	})
	t.Run("NeverForAToolWithout", func(t *testing.T) {
		e := newClientEnv(t)
		call := custody.Call{Trace: "t-client", Tool: "post_announcement", Args: json.RawMessage(post), Actor: "agent-1", Via: "test"}
		id, held := e.held(t, call)
		ask := &asker{verdict: approval.Approve}
		if e.gw.ClientApproves("post_announcement") || !e.gw.ClientApproves("edit_file") {
			t.Fatal("ClientApproves does not follow the tools' approvers")
		}
		if _, err := e.gw.AwaitClientDecision(ctx, call, id, 0, held, ask.approval(0)); err != held {
			t.Fatalf("a tool without the client: %v, want the refusal that held it", err)
		}
		if len(ask.questions()) != 0 {
			t.Fatal("the client was asked about a tool whose approvers do not name it")
		}
	})
	t.Run("NeverForAnotherAgent", func(t *testing.T) {
		e := newClientEnv(t)
		id, held := e.held(t, editCall)
		other := editCall
		other.Actor = "agent-2"
		ask := &asker{verdict: approval.Approve}
		if _, err := e.gw.AwaitClientDecision(ctx, other, id, 0, held, ask.approval(0)); err != held || len(ask.questions()) != 0 {
			t.Fatalf("another agent's approval: %v, asked %d times; want held, never asked", err, len(ask.questions()))
		}
	})
	t.Run("TooLongToShow", func(t *testing.T) {
		// The user must see all of what they approve: an operator decides.
		e := newClientEnv(t)
		call := editCall
		call.Args = json.RawMessage(`{"path":"big.md","edits":[{"oldText":"a","newText":"` + strings.Repeat("b", 40<<10) + `"}]}`)
		id, held := e.held(t, call)
		ask := &asker{verdict: approval.Approve}
		if _, err := e.gw.AwaitClientDecision(ctx, call, id, 0, held, ask.approval(0)); err != held || len(ask.questions()) != 0 {
			t.Fatalf("arguments too long to show: %v, asked %d times; want held, never asked", err, len(ask.questions()))
		}
	})
	t.Run("FailsWithoutWait", func(t *testing.T) {
		e := newClientEnv(t)
		id, held := e.held(t, editCall)
		_, err := e.gw.AwaitClientDecision(ctx, editCall, id, 0, held, (&asker{err: errors.New("no user")}).approval(0))
		if err != held {
			t.Fatalf("a failed question: %v, want the refusal that held it", err)
		}
		if a, _ := e.svc.Get(ctx, id); a.Status != custody.ApprovalPending {
			t.Fatalf("approval %s, want pending for an operator", a.Status)
		}
	})
	t.Run("FailsThenTheConsole", func(t *testing.T) {
		e := newClientEnv(t)
		id, held := e.held(t, editCall)
		ask := &asker{err: errors.New("no user")}
		go func() {
			for len(ask.questions()) == 0 {
				time.Sleep(5 * time.Millisecond)
			}
			e.svc.Decide(ctx, id, approval.Decision{Decision: approval.Approve, Operator: "op-1"})
		}()
		if _, err := e.gw.AwaitClientDecision(ctx, editCall, id, time.Minute, held, ask.approval(0)); err != nil || e.ran() != 1 {
			t.Fatalf("approved in the console after the question failed: %v; ran %d times", err, e.ran())
		}
	})
	t.Run("UnansweredWithin", func(t *testing.T) {
		e := newClientEnv(t)
		id, held := e.held(t, editCall)
		c := gate.ClientApproval{Name: "slow", Within: 50 * time.Millisecond, Ask: func(ctx context.Context, _ gate.ClientQuestion) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		}}
		if _, err := e.gw.AwaitClientDecision(ctx, editCall, id, 0, held, c); err != held {
			t.Fatalf("a question unanswered within its bound: %v, want held", err)
		}
	})
	t.Run("ConsoleFirst", func(t *testing.T) {
		e := newClientEnv(t)
		id, held := e.held(t, editCall)
		asked, withdrawn := make(chan struct{}), make(chan struct{})
		c := gate.ClientApproval{Name: "test-client", Version: "4.2", Ask: func(ctx context.Context, _ gate.ClientQuestion) (string, error) {
			close(asked)
			<-ctx.Done()
			close(withdrawn)
			return "", ctx.Err()
		}}
		go func() {
			<-asked
			e.svc.Decide(ctx, id, approval.Decision{Decision: approval.Approve, Operator: "op-1"})
		}()
		if _, err := e.gw.AwaitClientDecision(ctx, editCall, id, 0, held, c); err != nil || e.ran() != 1 {
			t.Fatalf("approved in the console first: %v; ran %d times", err, e.ran())
		}
		select {
		case <-withdrawn:
		default:
			t.Fatal("the question was not withdrawn once an operator decided")
		}
		if es, _ := e.decided(t); len(es) != 1 || es[0].Actor != "op-1" {
			t.Fatalf("approval.decided: %+v, want the operator's alone", es)
		}
	})
	t.Run("ClientAfterTheConsole", func(t *testing.T) {
		// The user answers just after an operator decided: the operator's
		// decision stands, and the user's is not recorded.
		e := newClientEnv(t)
		id, held := e.held(t, editCall)
		c := gate.ClientApproval{Name: "test-client", Ask: func(context.Context, gate.ClientQuestion) (string, error) {
			if _, err := e.svc.Decide(ctx, id, approval.Decision{Decision: approval.Decline, Operator: "op-1"}); err != nil {
				return "", err
			}
			return approval.Approve, nil
		}}
		_, err := e.gw.AwaitClientDecision(ctx, editCall, id, 0, held, c)
		if custody.ErrorKind(err) != custody.EDENIED || e.ran() != 0 {
			t.Fatalf("declined in the console before the user approved: %v; ran %d times", err, e.ran())
		}
		if es, _ := e.decided(t); len(es) != 1 || es[0].Actor != "op-1" {
			t.Fatalf("approval.decided: %+v, want the operator's alone", es)
		}
	})
}

// TestClientApproversChecked: a tool naming an approver the gateway does
// not know is refused when the gateway is built.
func TestClientApproversChecked(t *testing.T) {
	db, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	svc, err := approval.New(approval.Config{Store: db, Ledger: db})
	if err != nil {
		t.Fatal(err)
	}
	tools := example.Tools(db, nil)
	for i := range tools {
		if tools[i].Spec.Name == "post_announcement" {
			tools[i].Spec.Approvers = []string{"console", "slack"}
		}
	}
	name, ex := example.Contract()
	reg, err := contract.Load(contract.Options{Extra: map[string][]byte{name: ex}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = gate.New(gate.Config{Registry: reg, Ledger: db, Approvals: svc, State: db, Logger: discard()}, example.EnvelopeID, tools)
	if err == nil || !strings.Contains(err.Error(), `approver "slack"`) {
		t.Fatalf("an unknown approver: %v", err)
	}
}
