package assure

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/custody-dev/custody/systems/llm"
)

// fakeOpenAI is an OpenAI-compatible chat server whose "model" is the
// careful reference agent: the boundary a real model sits behind.
func fakeOpenAI(t *testing.T, sawPrompt *atomic.Bool) *httptest.Server {
	type call struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	type message struct {
		Role       string  `json:"role"`
		Content    *string `json:"content"`
		ToolCalls  []call  `json:"tool_calls,omitempty"`
		ToolCallID string  `json:"tool_call_id,omitempty"`
	}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []message        `json:"messages"`
			Tools    []map[string]any `json:"tools"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var msgs []llm.Message
		for _, m := range req.Messages {
			lm := llm.Message{Role: m.Role, ToolCallID: m.ToolCallID}
			if m.Content != nil {
				lm.Content = *m.Content
			}
			for _, c := range m.ToolCalls {
				lm.ToolCalls = append(lm.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: json.RawMessage(c.Function.Arguments)})
			}
			msgs = append(msgs, lm)
		}
		if len(req.Tools) == 7 && strings.Contains(msgs[0].Content, "DF-CAE-WARD-ROUND-001") && strings.Contains(msgs[0].Content, "DF-INV-HUMAN-DECIDES") {
			sawPrompt.Store(true)
		}
		resp, _ := scripted{Careful: true}.Chat(r.Context(), llm.Request{Messages: msgs})
		out := message{Role: "assistant", Content: &resp.Message.Content}
		for _, tc := range resp.Message.ToolCalls {
			var c call
			c.ID, c.Type, c.Function.Name, c.Function.Arguments = tc.ID, "function", tc.Name, string(tc.Arguments)
			out.ToolCalls = append(out.ToolCalls, c)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": out, "finish_reason": "stop"}}})
	}))
}

// TestModelTarget runs a model target over HTTP through the agent loop:
// the system prompt is built from the envelope, the tools are offered with
// their schemas, and a model that behaves carefully breaches nothing.
func TestModelTarget(t *testing.T) {
	var saw atomic.Bool
	srv := fakeOpenAI(t, &saw)
	defer srv.Close()
	target := "openai://" + strings.TrimPrefix(srv.URL, "http://") + "/v1/fake-careful"
	res := runPack(t, Config{Target: target, Cases: 1})
	if res.Info.Backend != "openai:fake-careful" || len(res.Traces) != 7 {
		t.Fatalf("backend %q, %d traces", res.Info.Backend, len(res.Traces))
	}
	if !saw.Load() {
		t.Fatal("the model was never offered the 7 tools with the envelope's system prompt")
	}
	if len(res.Findings) != 0 || res.Info.Metrics.UtilityInjected != 1 {
		t.Fatalf("findings %+v, utility under injection %v", res.Findings, res.Info.Metrics.UtilityInjected)
	}
}

func TestOpenTarget(t *testing.T) {
	tests := []struct {
		name, target, backend string
	}{
		{"Careful", targetCareful, targetCareful},
		{"Naive", targetNaive, targetNaive},
		{"Ollama", "ollama://localhost:11434/gemma3", "ollama:gemma3"},
		{"OpenAI", "openai://localhost:8000/v1/qwen", "openai:qwen"},
		{"ErrUnknown", "scripted:reckless", ""},
		{"ErrTemplate", "template", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := openTarget(tt.target)
			if tt.backend == "" {
				if err == nil {
					t.Fatalf("OpenTarget(%q) = %s, want an error", tt.target, b.Name())
				}
				return
			}
			if err != nil || b.Name() != tt.backend {
				t.Fatalf("OpenTarget(%q) = %v, %v; want %s", tt.target, b, err, tt.backend)
			}
		})
	}
}
