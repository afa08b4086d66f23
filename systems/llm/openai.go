package llm

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/custody-dev/custody"
)

// OpenAI is a backend on any OpenAI-compatible /chat/completions endpoint
// (llama.cpp server, vLLM, LM Studio). Tool call arguments arrive as a JSON
// string; its contents are kept byte for byte as the call's Arguments.
type OpenAI struct {
	// BaseURL is the API root, e.g. "http://localhost:8000/v1".
	BaseURL string
	Model   string
	// APIKey, when set, is sent as a bearer token.
	APIKey string
	Client *http.Client
}

var _ Backend = (*OpenAI)(nil)

// Name returns "openai:MODEL".
func (o *OpenAI) Name() string { return "openai:" + o.Model }

type openaiRequest struct {
	Model     string          `json:"model"`
	Messages  []openaiMessage `json:"messages"`
	Tools     []wireTool      `json:"tools,omitempty"`
	MaxTokens int             `json:"max_tokens,omitempty"`
	Stream    bool            `json:"stream"`
}

type openaiMessage struct {
	Role       string           `json:"role"`
	Content    *string          `json:"content"`
	ToolCalls  []openaiToolCall `json:"tool_calls,omitempty"`
	ToolCallID string           `json:"tool_call_id,omitempty"`
	Name       string           `json:"name,omitempty"`
}

type openaiToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type openaiResponse struct {
	Choices []struct {
		Message      openaiMessage `json:"message"`
		FinishReason string        `json:"finish_reason"`
	} `json:"choices"`
}

// Chat posts one non-streaming turn to BaseURL/chat/completions.
func (o *OpenAI) Chat(ctx context.Context, r Request) (Response, error) {
	req := openaiRequest{Model: o.Model, Tools: wireTools(r.Tools), MaxTokens: r.MaxTokens}
	for _, m := range r.Messages {
		req.Messages = append(req.Messages, toOpenAI(m))
	}
	url := strings.TrimRight(o.BaseURL, "/") + "/chat/completions"
	var resp openaiResponse
	if err := postJSON(ctx, o.Client, url, o.APIKey, req, &resp); err != nil {
		return Response{}, err
	}
	if len(resp.Choices) == 0 {
		return Response{}, custody.Errorf(custody.EINVALID, "model reply from %s has no choices", url)
	}
	return Response{Message: fromOpenAI(resp.Choices[0].Message)}, nil
}

func toOpenAI(m Message) openaiMessage {
	content := m.Content
	om := openaiMessage{Role: m.Role, Content: &content, ToolCallID: m.ToolCallID, Name: m.Name}
	if m.Role == RoleAssistant && len(m.ToolCalls) > 0 && content == "" {
		om.Content = nil
	}
	for _, tc := range m.ToolCalls {
		var c openaiToolCall
		c.ID, c.Type = tc.ID, "function"
		c.Function.Name = tc.Name
		c.Function.Arguments = string(tc.Arguments)
		om.ToolCalls = append(om.ToolCalls, c)
	}
	return om
}

func fromOpenAI(om openaiMessage) Message {
	m := Message{Role: RoleAssistant}
	if om.Content != nil {
		m.Content = *om.Content
	}
	for _, c := range om.ToolCalls {
		m.ToolCalls = append(m.ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: json.RawMessage(c.Function.Arguments)})
	}
	return m
}
