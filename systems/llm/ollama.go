package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/custody-dev/custody"
)

// Ollama is a backend on an Ollama server's /api/chat endpoint. Tool calls
// come back with their arguments as a JSON object, kept byte for byte.
type Ollama struct {
	// BaseURL is the server root, e.g. "http://localhost:11434".
	BaseURL string
	Model   string
	Client  *http.Client
}

var _ Backend = (*Ollama)(nil)

// Name returns "ollama:MODEL".
func (o *Ollama) Name() string { return "ollama:" + o.Model }

type ollamaRequest struct {
	Model    string          `json:"model"`
	Messages []ollamaMessage `json:"messages"`
	Tools    []wireTool      `json:"tools,omitempty"`
	Stream   bool            `json:"stream"`
	Options  map[string]any  `json:"options,omitempty"`
}

type ollamaMessage struct {
	Role      string           `json:"role"`
	Content   string           `json:"content"`
	ToolCalls []ollamaToolCall `json:"tool_calls,omitempty"`
	ToolName  string           `json:"tool_name,omitempty"`
}

type ollamaToolCall struct {
	ID       string `json:"id,omitempty"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type ollamaResponse struct {
	Message ollamaMessage `json:"message"`
	Done    bool          `json:"done"`
	Error   string        `json:"error"`
}

// wireTool is a tool offer as both Ollama and OpenAI spell it.
type wireTool struct {
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

func wireTools(defs []ToolDef) []wireTool {
	out := make([]wireTool, 0, len(defs))
	for _, d := range defs {
		out = append(out, wireTool{Type: "function", Function: wireFunction(d)})
	}
	return out
}

// Chat posts one non-streaming turn to /api/chat.
func (o *Ollama) Chat(ctx context.Context, r Request) (Response, error) {
	req := ollamaRequest{Model: o.Model, Tools: wireTools(r.Tools)}
	for _, m := range r.Messages {
		req.Messages = append(req.Messages, toOllama(m))
	}
	if r.MaxTokens > 0 {
		req.Options = map[string]any{"num_predict": r.MaxTokens}
	}
	var resp ollamaResponse
	url := strings.TrimRight(o.BaseURL, "/") + "/api/chat"
	if err := postJSON(ctx, o.Client, url, "", req, &resp); err != nil {
		return Response{}, err
	}
	if resp.Error != "" {
		// Ollama may say what went wrong in a 200 answer: an empty reply
		// would pass for the model's.
		return Response{}, custody.Errorf(custody.EUNAVAILABLE, "model server: POST %s: %s", url, resp.Error)
	}
	return Response{Message: fromOllama(resp.Message)}, nil
}

func toOllama(m Message) ollamaMessage {
	om := ollamaMessage{Role: m.Role, Content: m.Content}
	if m.Role == RoleTool {
		om.ToolName = m.Name
	}
	for _, tc := range m.ToolCalls {
		var c ollamaToolCall
		c.ID = tc.ID
		c.Function.Name = tc.Name
		c.Function.Arguments = objectOrEmpty(tc.Arguments)
		om.ToolCalls = append(om.ToolCalls, c)
	}
	return om
}

// objectOrEmpty returns args when it is a JSON object, else {}: Ollama
// refuses a history whose tool call arguments are not an object.
func objectOrEmpty(args json.RawMessage) json.RawMessage {
	if json.Valid(args) && strings.HasPrefix(strings.TrimSpace(string(args)), "{") {
		return args
	}
	return json.RawMessage(`{}`)
}

func fromOllama(om ollamaMessage) Message {
	m := Message{Role: RoleAssistant, Content: om.Content}
	for i, c := range om.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		m.ToolCalls = append(m.ToolCalls, ToolCall{ID: id, Name: c.Function.Name, Arguments: c.Function.Arguments})
	}
	return m
}
