// Package agent runs the tool-calling loop between a chat backend and the
// gateway. The model is offered the gateway's tools with their contract
// schemas; every call it proposes is executed through the gateway with the
// model's exact argument bytes, and the result or the refusal (kind,
// message, violations) is fed back as a tool message. The loop stops on a
// final answer, on a call waiting for a human approval, or when its step
// budget is spent.
package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/systems/llm"
)

// DefaultMaxSteps bounds the model turns of one Run unless told.
const DefaultMaxSteps = 16

// Gateway is the chokepoint the loop calls tools through.
type Gateway interface {
	Call(ctx context.Context, call custody.Call) (custody.Result, error)
	Tools() []custody.ToolSpec
}

// Schemas returns the self-contained schema of a ref, to offer a tool's
// input contract to a model.
type Schemas interface {
	Bundle(ref string) (json.RawMessage, error)
}

// Stop says why a Run ended.
type Stop string

// Reasons a Run ends.
const (
	StopFinal   Stop = "final"
	StopPending Stop = "pending_approval"
	StopBudget  Stop = "step_budget"
)

// Outcome is what became of one tool call the model proposed.
type Outcome struct {
	Call llm.ToolCall `json:"call"`
	// Output is the tool's validated output on success.
	Output json.RawMessage `json:"output,omitempty"`
	// Receipt is the ledger entry of the outcome, refusals included.
	Receipt *custody.Receipt `json:"receipt,omitempty"`
	// Err is the refusal or failure; nil on success.
	Err *custody.Error `json:"-"`
}

// Transcript is a conversation between a model and the gateway: the
// messages and each call's outcome. Run appends to it, so a transcript that
// stopped for an approval can be continued once the approval is decided.
type Transcript struct {
	// Trace is the gateway trace every call of the conversation joins.
	Trace    string
	Messages []llm.Message
	Outcomes []Outcome
	Stop     Stop
	// Final is the model's final answer when Stop is StopFinal.
	Final string
	// ApprovalID names the approval the conversation waits for when Stop
	// is StopPending.
	ApprovalID string
}

// Loop is one agent configuration.
type Loop struct {
	Backend llm.Backend
	Gateway Gateway
	// Schemas offers the tool schemas; a bare object schema when nil.
	Schemas Schemas
	// MaxSteps bounds the model turns of one Run; DefaultMaxSteps when 0.
	MaxSteps int
	// Actor is recorded as the caller of every tool call; "agent" when
	// empty.
	Actor string
	// PauseAfter names tools whose success hands the conversation to a
	// human: the loop stops with StopPending and the approval_request_id
	// of the tool's output.
	PauseAfter []string
}

// Run continues t: it asks the model, executes its calls through the
// gateway and feeds back the outcomes until a final answer, a pending
// approval or the step budget. A transcript without a trace gets a new
// one, so that refusals and successes share it. Errors are the model's
// (the transcript so far is kept); refusals are outcomes, not errors.
func (l *Loop) Run(ctx context.Context, t *Transcript) error {
	if t.Trace == "" {
		t.Trace = uuid.NewString()
	}
	t.Stop, t.Final, t.ApprovalID = "", "", ""
	offers := l.offers()
	max := l.MaxSteps
	if max <= 0 {
		max = DefaultMaxSteps
	}
	for range max {
		resp, err := l.Backend.Chat(ctx, llm.Request{Messages: t.Messages, Tools: offers})
		if err != nil {
			return fmt.Errorf("agent: %s turn %d: %w", l.Backend.Name(), len(t.Messages), err)
		}
		msg := resp.Message
		msg.Role = llm.RoleAssistant
		t.Messages = append(t.Messages, msg)
		if len(msg.ToolCalls) == 0 {
			t.Stop, t.Final = StopFinal, msg.Content
			return nil
		}
		if l.execute(ctx, t, msg.ToolCalls) {
			t.Stop = StopPending
			return nil
		}
	}
	t.Stop = StopBudget
	return nil
}

// execute runs the calls of one model turn in order and reports whether
// the conversation now waits for a human.
func (l *Loop) execute(ctx context.Context, t *Transcript, calls []llm.ToolCall) (pending bool) {
	for _, tc := range calls {
		o := l.call(ctx, t.Trace, tc)
		t.Outcomes = append(t.Outcomes, o)
		t.Messages = append(t.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Name: tc.Name, Content: feedback(o)})
		if id := l.waitsFor(o); id != "" {
			t.ApprovalID, pending = id, true
		}
	}
	return pending
}

// call executes one tool call through the gateway with the model's bytes.
func (l *Loop) call(ctx context.Context, trace string, tc llm.ToolCall) Outcome {
	actor := l.Actor
	if actor == "" {
		actor = "agent"
	}
	res, err := l.Gateway.Call(ctx, custody.Call{Trace: trace, Tool: tc.Name, Args: tc.Arguments, Actor: actor, Via: "agent"})
	if err != nil {
		e := custody.AsError(err)
		return Outcome{Call: tc, Receipt: e.Receipt, Err: e}
	}
	r := res.Receipt
	return Outcome{Call: tc, Output: res.Output, Receipt: &r}
}

// waitsFor returns the approval an outcome waits for, or "".
func (l *Loop) waitsFor(o Outcome) string {
	if o.Err != nil {
		if o.Err.Kind == custody.EPENDING {
			return o.Err.ApprovalRequestID
		}
		return ""
	}
	if !slices.Contains(l.PauseAfter, o.Call.Name) {
		return ""
	}
	var out struct {
		ID string `json:"approval_request_id"`
	}
	if json.Unmarshal(o.Output, &out) != nil {
		return ""
	}
	return out.ID
}

// refusal is what a model is told about a refused call: what a caller may
// see, never internal detail.
type refusal struct {
	Refused struct {
		Kind              string              `json:"kind"`
		Message           string              `json:"message"`
		Violations        []custody.Violation `json:"violations,omitempty"`
		ApprovalRequestID string              `json:"approval_request_id,omitempty"`
	} `json:"refused"`
}

// feedback is the tool message content for an outcome.
func feedback(o Outcome) string {
	if o.Err == nil {
		return string(o.Output)
	}
	var r refusal
	r.Refused.Kind, r.Refused.Message = o.Err.Kind, o.Err.Message
	r.Refused.Violations, r.Refused.ApprovalRequestID = o.Err.Violations, o.Err.ApprovalRequestID
	raw, _ := json.Marshal(r)
	return string(raw)
}

// offers returns the gateway's tools as model tool definitions.
func (l *Loop) offers() []llm.ToolDef {
	specs := l.Gateway.Tools()
	out := make([]llm.ToolDef, 0, len(specs))
	for _, s := range specs {
		params := json.RawMessage(`{"type":"object"}`)
		if l.Schemas != nil {
			if b, err := l.Schemas.Bundle(s.Input); err == nil {
				params = b
			}
		}
		out = append(out, llm.ToolDef{Name: s.Name, Description: s.Description, Parameters: params})
	}
	return out
}

// Refused reports whether a tool message content is a refusal, and returns
// its kind.
func Refused(content string) (kind string, ok bool) {
	var r refusal
	if json.Unmarshal([]byte(content), &r) != nil || r.Refused.Kind == "" {
		return "", false
	}
	return r.Refused.Kind, true
}
