package peas_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/systems/llm"
	"github.com/custody-dev/custody/systems/peas"
)

// model is a scripted model behind a stub server: it answers each turn
// from the conversation it was sent.
type model func(msgs []llm.Message) llm.Message

// planned is a model that follows the scripted planner but rewrites some
// of its calls: the way a model misbehaves.
func planned(rewrite func(llm.ToolCall) llm.ToolCall) model {
	return func(msgs []llm.Message) llm.Message {
		resp, _ := peas.Planner{}.Chat(context.Background(), llm.Request{Messages: msgs})
		for i, c := range resp.Message.ToolCalls {
			resp.Message.ToolCalls[i] = rewrite(c)
		}
		return resp.Message
	}
}

func honest(c llm.ToolCall) llm.ToolCall { return c }

// skipApproval posts the sign instead of asking for approval, citing the
// brief id as if it were an approval.
func skipApproval(c llm.ToolCall) llm.ToolCall {
	if c.Name != peas.ToolApprove {
		return c
	}
	var in struct {
		BriefID string `json:"brief_id"`
	}
	json.Unmarshal(c.Arguments, &in)
	return llm.ToolCall{ID: c.ID, Name: peas.ToolVMS, Arguments: json.RawMessage(vmsArgs(in.BriefID, sign, proposed))}
}

// forgeApproval posts the sign citing an approval id it made up.
func forgeApproval(c llm.ToolCall) llm.ToolCall {
	if c.Name != peas.ToolApprove {
		return c
	}
	return llm.ToolCall{ID: c.ID, Name: peas.ToolVMS, Arguments: json.RawMessage(vmsArgs(forgedID, sign, proposed))}
}

// lowercase posts the approved message in lowercase.
func lowercase(c llm.ToolCall) llm.ToolCall {
	if c.Name == peas.ToolVMS {
		c.Arguments = json.RawMessage(strings.Replace(string(c.Arguments), proposed, strings.ToLower(proposed), 1))
	}
	return c
}

// ollamaServer speaks Ollama's /api/chat: tool call arguments are objects.
func ollamaServer(t *testing.T, m model) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Stream   bool   `json:"stream"`
			Tools    []wireTool
			Messages []struct {
				Role      string `json:"role"`
				Content   string `json:"content"`
				ToolName  string `json:"tool_name"`
				ToolCalls []struct {
					Function struct {
						Name      string          `json:"name"`
						Arguments json.RawMessage `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"messages"`
		}
		if r.URL.Path != "/api/chat" || json.NewDecoder(r.Body).Decode(&req) != nil || req.Stream || len(req.Tools) != 5 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var msgs []llm.Message
		for _, wm := range req.Messages {
			m := llm.Message{Role: wm.Role, Content: wm.Content, Name: wm.ToolName}
			for _, c := range wm.ToolCalls {
				m.ToolCalls = append(m.ToolCalls, llm.ToolCall{Name: c.Function.Name, Arguments: c.Function.Arguments})
			}
			msgs = append(msgs, m)
		}
		out := m(msgs)
		type fn struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		var calls []map[string]fn
		for _, c := range out.ToolCalls {
			calls = append(calls, map[string]fn{"function": {Name: c.Name, Arguments: c.Arguments}})
		}
		json.NewEncoder(w).Encode(map[string]any{"model": req.Model, "created_at": "2026-01-09T14:00:00Z",
			"message": map[string]any{"role": "assistant", "content": out.Content, "tool_calls": calls}, "done": true, "done_reason": "stop"})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// wireTool is a tool offer as both servers receive it.
type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// openaiServer speaks /v1/chat/completions: tool call arguments are a JSON
// string, tool results cite tool_call_id.
func openaiServer(t *testing.T, m model) *httptest.Server {
	t.Helper()
	type wireCall struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string     `json:"model"`
			Tools    []wireTool `json:"tools"`
			Messages []struct {
				Role       string     `json:"role"`
				Content    *string    `json:"content"`
				ToolCallID string     `json:"tool_call_id"`
				ToolCalls  []wireCall `json:"tool_calls"`
			} `json:"messages"`
		}
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil || len(req.Tools) != 5 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var msgs []llm.Message
		for _, wm := range req.Messages {
			m := llm.Message{Role: wm.Role, ToolCallID: wm.ToolCallID}
			if wm.Content != nil {
				m.Content = *wm.Content
			}
			for _, c := range wm.ToolCalls {
				m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: json.RawMessage(c.Function.Arguments)})
			}
			msgs = append(msgs, m)
		}
		out := m(msgs)
		var calls []wireCall
		for i, c := range out.ToolCalls {
			wc := wireCall{ID: fmt.Sprintf("call_%d_%d", len(msgs), i), Type: "function"}
			wc.Function.Name, wc.Function.Arguments = c.Name, string(c.Arguments)
			calls = append(calls, wc)
		}
		finish := "stop"
		if len(calls) > 0 {
			finish = "tool_calls"
		}
		json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": finish,
				"message": map[string]any{"role": "assistant", "content": out.Content, "tool_calls": calls}}}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// adapters opens each adapter on a stub server running m.
func adapters(t *testing.T, m model) map[string]llm.Backend {
	t.Helper()
	ol, err := llm.Open("ollama://" + strings.TrimPrefix(ollamaServer(t, m).URL, "http://") + "/gemma4")
	if err != nil {
		t.Fatal(err)
	}
	oa, err := llm.Open("openai://" + strings.TrimPrefix(openaiServer(t, m).URL, "http://") + "/v1/gemma-4")
	if err != nil {
		t.Fatal(err)
	}
	return map[string]llm.Backend{"ollama": ol, "openai": oa}
}

func TestModelsDriveChain(t *testing.T) {
	for name, b := range adapters(t, planned(honest)) {
		t.Run(name, func(t *testing.T) {
			s := newStack(t, llm.Router{Main: b})
			ch := s.pending(t)
			s.decide(t, ch.ApprovalID, approval.Approve, nil)
			if err := s.sys.Continue(context.Background(), s.gw, ch); err != nil {
				t.Fatal(err)
			}
			if ch.Stage != peas.StageNotified {
				t.Fatalf("stage %q (final %q), want notified", ch.Stage, ch.Final)
			}
			s.signShows(t, proposed)
		})
	}
}

// TestMisbehavingModelsRefused: a model that skips the approval, forges an
// approval id or posts lowercase text is refused by the gateway, the
// refusal is on the ledger and the sign stays blank.
func TestMisbehavingModelsRefused(t *testing.T) {
	tests := []struct {
		name    string
		rewrite func(llm.ToolCall) llm.ToolCall
		approve bool
		kind    string
	}{
		{"SkipApproval", skipApproval, false, custody.EDENIED},
		{"ForgeApprovalID", forgeApproval, false, custody.EDENIED},
		{"LowercaseMessage", lowercase, true, custody.EINVALID},
	}
	for _, tt := range tests {
		for name, b := range adapters(t, planned(tt.rewrite)) {
			t.Run(tt.name+"/"+name, func(t *testing.T) {
				s := newStack(t, llm.Router{Main: b})
				ch, err := s.sys.Start(context.Background(), s.gw, location, json.RawMessage(whiteout))
				if err != nil {
					t.Fatal(err)
				}
				if tt.approve {
					s.decide(t, ch.ApprovalID, approval.Approve, nil)
					if err := s.sys.Continue(context.Background(), s.gw, ch); err != nil {
						t.Fatal(err)
					}
				}
				last := ch.Transcript.Outcomes[len(ch.Transcript.Outcomes)-1]
				if last.Call.Name != peas.ToolVMS {
					t.Fatalf("last call %s, want the forged %s", last.Call.Name, peas.ToolVMS)
				}
				if last.Err == nil {
					t.Fatalf("forged %s ran: %s", last.Call.Name, last.Output)
				}
				s.refusedOnLedger(t, last.Err, tt.kind)
				if ch.Stage != peas.StageStopped || ch.VMSUpdateID != "" {
					t.Fatalf("chain %+v, want stopped without a sign update", ch)
				}
				s.signShows(t, "")
			})
		}
	}
}
