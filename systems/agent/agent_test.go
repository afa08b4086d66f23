package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/example"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/store/sqlite"
	"github.com/custody-dev/custody/systems/agent"
	"github.com/custody-dev/custody/systems/llm"
)

// core is a real gateway on the example envelope.
type core struct {
	db  *sqlite.DB
	reg *contract.Registry
	gw  *gate.Gateway
}

func newCore(t *testing.T) core {
	t.Helper()
	db, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	name, raw := example.Contract()
	reg, err := contract.Load(contract.Options{Extra: map[string][]byte{name: raw}})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := approval.New(approval.Config{Store: db, Ledger: db})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gate.New(gate.Config{Registry: reg, Ledger: db, Approvals: svc, State: db}, example.EnvelopeID, example.Tools(db, nil))
	if err != nil {
		t.Fatal(err)
	}
	return core{db: db, reg: reg, gw: gw}
}

// script is a backend that plays fixed replies, one per turn, and keeps
// every request it saw. Past the script it repeats the last reply.
type script struct {
	replies []llm.Message
	seen    []llm.Request
}

func (s *script) Name() string { return "script" }

func (s *script) Chat(_ context.Context, r llm.Request) (llm.Response, error) {
	s.seen = append(s.seen, r)
	i := min(len(s.seen)-1, len(s.replies)-1)
	return llm.Response{Message: s.replies[i]}, nil
}

func call(id, tool, args string) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Name: tool, Arguments: json.RawMessage(args)}}}
}

func answer(text string) llm.Message { return llm.Message{Role: llm.RoleAssistant, Content: text} }

func start() *agent.Transcript {
	return &agent.Transcript{Messages: []llm.Message{{Role: llm.RoleUser, Content: "go"}}}
}

func TestRunOffersToolsAndStopsOnFinal(t *testing.T) {
	c := newCore(t)
	// The arguments keep their odd spacing: the gateway must see the model's bytes.
	b := &script{replies: []llm.Message{call("c1", "write_note", `{"title": "t",  "text":"x"}`), answer("done")}}
	l := &agent.Loop{Backend: b, Gateway: c.gw, Schemas: c.reg}
	tr := start()
	if err := l.Run(context.Background(), tr); err != nil {
		t.Fatal(err)
	}
	if tr.Stop != agent.StopFinal || tr.Final != "done" || len(tr.Outcomes) != 1 || tr.Outcomes[0].Err != nil {
		t.Fatalf("transcript = %+v", tr)
	}
	if len(b.seen[0].Tools) != 3 || !strings.Contains(string(b.seen[0].Tools[1].Parameters), `"title"`) {
		t.Fatalf("offered tools = %+v, want the bundled input schemas", b.seen[0].Tools)
	}
	tool := b.seen[1].Messages[len(b.seen[1].Messages)-1]
	if tool.Role != llm.RoleTool || tool.ToolCallID != "c1" || !strings.Contains(tool.Content, "note_id") {
		t.Fatalf("fed back %+v, want the tool result", tool)
	}
	es, err := c.db.Entries(context.Background(), custody.Query{Trace: tr.Trace, Kind: custody.KindCallSucceeded})
	if err != nil || len(es) != 1 || !strings.Contains(string(es[0].Body), `{"title": "t",  "text":"x"}`) {
		t.Fatalf("ledger entries %v (%v), want the exact argument bytes", es, err)
	}
}

func TestRunFeedsBackRefusals(t *testing.T) {
	c := newCore(t)
	b := &script{replies: []llm.Message{call("c1", "write_note", `{"title":"t"}`), call("c2", "delete_everything", `{}`), answer("ok")}}
	tr := start()
	if err := (&agent.Loop{Backend: b, Gateway: c.gw}).Run(context.Background(), tr); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		i    int
		kind string
	}{
		{"ContractViolation", 0, custody.EINVALID},
		{"OutsideEnvelope", 1, custody.EDENIED},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tr.Outcomes[tt.i]
			if o.Err == nil || o.Err.Kind != tt.kind || o.Receipt == nil {
				t.Fatalf("outcome = %+v, want a recorded %s refusal", o, tt.kind)
			}
			fed := b.seen[tt.i+1].Messages[len(b.seen[tt.i+1].Messages)-1].Content
			if kind, ok := agent.Refused(fed); !ok || kind != tt.kind {
				t.Fatalf("fed back %s, want a %s refusal", fed, tt.kind)
			}
		})
	}
	if !strings.Contains(b.seen[1].Messages[len(b.seen[1].Messages)-1].Content, `"violations"`) {
		t.Errorf("a contract refusal is fed back without its violations")
	}
}

func TestRunStopsOnPendingApproval(t *testing.T) {
	c := newCore(t)
	b := &script{replies: []llm.Message{call("c1", "post_announcement", `{"channel":"ops","message":"HELLO"}`), answer("never")}}
	tr := start()
	if err := (&agent.Loop{Backend: b, Gateway: c.gw}).Run(context.Background(), tr); err != nil {
		t.Fatal(err)
	}
	if tr.Stop != agent.StopPending || tr.ApprovalID == "" || len(b.seen) != 1 {
		t.Fatalf("transcript = %+v after %d turns, want pending on the first", tr, len(b.seen))
	}
}

func TestRunPausesAfterTool(t *testing.T) {
	c := newCore(t)
	b := &script{replies: []llm.Message{call("c1", "get_time", `{}`), answer("never")}}
	tr := start()
	l := &agent.Loop{Backend: b, Gateway: c.gw, PauseAfter: []string{"get_time"}}
	if err := l.Run(context.Background(), tr); err != nil {
		t.Fatal(err)
	}
	// get_time's output names no approval: the loop goes on to the final answer.
	if tr.Stop != agent.StopFinal {
		t.Fatalf("stop = %s, want final when the output names no approval", tr.Stop)
	}
}

func TestRunStepBudget(t *testing.T) {
	c := newCore(t)
	b := &script{replies: []llm.Message{call("c1", "get_time", `{}`)}}
	tr := start()
	if err := (&agent.Loop{Backend: b, Gateway: c.gw, MaxSteps: 3}).Run(context.Background(), tr); err != nil {
		t.Fatal(err)
	}
	if tr.Stop != agent.StopBudget || len(b.seen) != 3 || len(tr.Outcomes) != 3 {
		t.Fatalf("stop %s after %d turns, want the budget after 3", tr.Stop, len(b.seen))
	}
}

// failing is a backend that cannot be reached.
type failing struct{}

func (failing) Name() string { return "failing" }
func (failing) Chat(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{}, custody.Errorf(custody.EUNAVAILABLE, "down")
}

func TestRunModelError(t *testing.T) {
	c := newCore(t)
	err := (&agent.Loop{Backend: failing{}, Gateway: c.gw}).Run(context.Background(), start())
	var e *custody.Error
	if !errors.As(err, &e) || e.Kind != custody.EUNAVAILABLE {
		t.Fatalf("err = %v, want the model's unavailable", err)
	}
}
