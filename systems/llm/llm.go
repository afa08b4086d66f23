// Package llm holds the chat backends that compose text and plan tool
// calls: the deterministic template backend (the default, no model needed),
// Ollama (/api/chat with tools) and any OpenAI-compatible server
// (/v1/chat/completions with tools).
//
// A model is a composer, never a classifier: every decision is made by
// deterministic code, and a model only words it or proposes tool calls that
// the gateway then validates. Compose enforces the composer side: every text
// a model writes passes a check, and on any failure the deterministic
// template text is used and the breach is reported.
package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Message roles, as spelled on the wire by both Ollama and OpenAI.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// ToolCalls are the calls an assistant message proposes.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID and Name identify the call a tool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	Name       string `json:"name,omitempty"`
}

// ToolDef offers one tool to a model. Parameters is a self-contained JSON
// Schema of the tool's input.
type ToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// ToolCall is one call a model proposes. Arguments holds the bytes as the
// model sent them, never decoded and re-encoded, so that the gateway
// validates and records exactly what the model said.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Request is one chat turn: the conversation so far and the tools on offer.
// MaxTokens bounds the reply; 0 leaves it to the backend.
type Request struct {
	Messages  []Message
	Tools     []ToolDef
	MaxTokens int
}

// Response is the model's reply: one assistant message, holding text, tool
// calls or both.
type Response struct {
	Message Message
}

// Backend is a chat model.
type Backend interface {
	// Name identifies the backend and model, e.g. "ollama:gemma4".
	Name() string
	// Chat sends one turn and returns the reply. Errors are *custody.Error:
	// EUNAVAILABLE when the server cannot be reached or answers with an
	// error status, EINVALID when its reply cannot be read.
	Chat(ctx context.Context, r Request) (Response, error)
}

// Prompt is what a composer hop asks a model to write.
type Prompt struct {
	System    string
	User      string
	MaxTokens int
}

// Composed is the text a composer hop produced.
type Composed struct {
	// Text is the text to use: the model's when it passed the check,
	// otherwise the template.
	Text string
	// Backend names who wrote Text: "template" or the model's backend name.
	Backend string
	// Breach says why a model's text was not used (the model failed or its
	// text failed the check); nil when the model's text was used or no
	// model was asked.
	Breach error
}

// Compose runs one composer hop. The template backend (or a nil one)
// returns template as it is. Any other backend is asked to write the text;
// its reply, trimmed, must pass check. When the model fails or its text
// fails the check, template is used and Breach records why.
func Compose(ctx context.Context, b Backend, p Prompt, template string, check func(string) error) Composed {
	if IsTemplate(b) {
		return Composed{Text: template, Backend: TemplateName}
	}
	msgs := make([]Message, 0, 2)
	if p.System != "" {
		msgs = append(msgs, Message{Role: RoleSystem, Content: p.System})
	}
	msgs = append(msgs, Message{Role: RoleUser, Content: p.User})
	resp, err := b.Chat(ctx, Request{Messages: msgs, MaxTokens: p.MaxTokens})
	if err != nil {
		return fallback(template, fmt.Errorf("%s: %w", b.Name(), err))
	}
	text := strings.TrimSpace(resp.Message.Content)
	if text == "" {
		return fallback(template, fmt.Errorf("%s: empty reply", b.Name()))
	}
	if check != nil {
		if err := check(text); err != nil {
			return fallback(template, fmt.Errorf("%s: %w", b.Name(), err))
		}
	}
	return Composed{Text: text, Backend: b.Name()}
}

func fallback(template string, breach error) Composed {
	return Composed{Text: template, Backend: TemplateName, Breach: breach}
}
