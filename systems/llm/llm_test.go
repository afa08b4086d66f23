package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/systems/llm"
)

func TestOpen(t *testing.T) {
	tests := []struct {
		name, url, want string
		base            string
		kind            string
	}{
		{name: "Default", url: "", want: "template"},
		{name: "Template", url: "template", want: "template"},
		{name: "Ollama", url: "ollama://localhost:11434/gemma4", want: "ollama:gemma4", base: "http://localhost:11434"},
		{name: "OllamaTag", url: "ollama://localhost:11434/gemma4:latest", want: "ollama:gemma4:latest", base: "http://localhost:11434"},
		{name: "OpenAI", url: "openai://host:8000/v1/MODEL", want: "openai:MODEL", base: "http://host:8000/v1"},
		{name: "OpenAIOrgModel", url: "openai://host:8000/v1/org/model", want: "openai:org/model", base: "http://host:8000/v1"},
		{name: "OpenAITLS", url: "openais://api.example.com/v1/m", want: "openai:m", base: "https://api.example.com/v1"},
		{name: "ErrScheme", url: "gopher://host/m", kind: custody.EINVALID},
		{name: "ErrNoHost", url: "ollama:///gemma4", kind: custody.EINVALID},
		{name: "ErrNoModel", url: "ollama://localhost:11434/", kind: custody.EINVALID},
		{name: "ErrOpenAINoModel", url: "openai://host:8000/v1", kind: custody.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := llm.Open(tt.url)
			if tt.kind != "" {
				if got := custody.ErrorKind(err); got != tt.kind {
					t.Fatalf("Open(%q) error kind = %q (%v), want %q", tt.url, got, err, tt.kind)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open(%q): %v", tt.url, err)
			}
			if b.Name() != tt.want {
				t.Errorf("Name() = %q, want %q", b.Name(), tt.want)
			}
			var base string
			switch b := b.(type) {
			case *llm.Ollama:
				base = b.BaseURL
			case *llm.OpenAI:
				base = b.BaseURL
			}
			if base != tt.base {
				t.Errorf("BaseURL = %q, want %q", base, tt.base)
			}
		})
	}
}

func TestOpenErrorNamesPart(t *testing.T) {
	_, err := llm.Open("gopher://host/m")
	if err == nil || !strings.Contains(err.Error(), `"gopher"`) {
		t.Fatalf("error %v does not name the scheme", err)
	}
}

// ollamaStub answers /api/chat with reply after checking the request.
func ollamaStub(t *testing.T, reply string, seen *map[string]any) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/api/chat" {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, seen); err != nil {
			t.Errorf("request is not JSON: %v", err)
		}
		io.WriteString(w, reply)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestOllamaChatToolCall(t *testing.T) {
	var seen map[string]any
	reply := `{"model":"gemma4","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"detect","arguments":{"b": 2, "a":1}}}]},"done":true}`
	srv := ollamaStub(t, reply, &seen)
	b := &llm.Ollama{BaseURL: srv.URL, Model: "gemma4"}
	resp, err := b.Chat(context.Background(), llm.Request{
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "go"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c0", Name: "detect", Arguments: json.RawMessage(`{"x":1}`)}}},
			{Role: llm.RoleTool, Name: "detect", ToolCallID: "c0", Content: `{"ok":true}`},
		},
		Tools:     []llm.ToolDef{{Name: "detect", Description: "d", Parameters: json.RawMessage(`{"type":"object"}`)}},
		MaxTokens: 64,
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen["stream"] != false || seen["model"] != "gemma4" {
		t.Errorf("request stream/model = %v/%v", seen["stream"], seen["model"])
	}
	tools := seen["tools"].([]any)
	fn := tools[0].(map[string]any)["function"].(map[string]any)
	if tools[0].(map[string]any)["type"] != "function" || fn["name"] != "detect" {
		t.Errorf("tools on the wire = %v", tools)
	}
	msgs := seen["messages"].([]any)
	call := msgs[1].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)["function"].(map[string]any)
	if _, ok := call["arguments"].(map[string]any); !ok {
		t.Errorf("history tool call arguments = %T, want an object", call["arguments"])
	}
	if msgs[2].(map[string]any)["tool_name"] != "detect" {
		t.Errorf("tool message = %v, want tool_name", msgs[2])
	}
	if len(resp.Message.ToolCalls) != 1 {
		t.Fatalf("tool calls = %v", resp.Message.ToolCalls)
	}
	tc := resp.Message.ToolCalls[0]
	if tc.Name != "detect" || string(tc.Arguments) != `{"b": 2, "a":1}` || tc.ID == "" {
		t.Errorf("tool call = %+v (args %s), want raw bytes kept", tc, tc.Arguments)
	}
}

func TestOpenAIChatToolCall(t *testing.T) {
	var seen map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		if r.Header.Get("Authorization") != "Bearer k" {
			t.Errorf("Authorization = %q", r.Header.Get("Authorization"))
		}
		body, _ := io.ReadAll(r.Body)
		json.Unmarshal(body, &seen)
		io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_9","type":"function","function":{"name":"detect","arguments":"{\"b\": 2, \"a\":1}"}}]}}]}`)
	}))
	defer srv.Close()
	b := &llm.OpenAI{BaseURL: srv.URL + "/v1", Model: "m", APIKey: "k"}
	resp, err := b.Chat(context.Background(), llm.Request{
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "go"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c0", Name: "detect", Arguments: json.RawMessage(`{"x":1}`)}}},
			{Role: llm.RoleTool, ToolCallID: "c0", Name: "detect", Content: "{}"},
		},
		Tools: []llm.ToolDef{{Name: "detect", Parameters: json.RawMessage(`{"type":"object"}`)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	msgs := seen["messages"].([]any)
	call := msgs[1].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)
	if call["type"] != "function" || call["function"].(map[string]any)["arguments"] != `{"x":1}` {
		t.Errorf("history tool call = %v, want arguments as a string", call)
	}
	if m := msgs[2].(map[string]any); m["tool_call_id"] != "c0" || m["name"] != "detect" {
		t.Errorf("tool message = %v, want its call id and tool name", msgs[2])
	}
	tc := resp.Message.ToolCalls[0]
	if tc.ID != "call_9" || string(tc.Arguments) != `{"b": 2, "a":1}` {
		t.Errorf("tool call = %+v (args %s)", tc, tc.Arguments)
	}
}

func TestChatErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/api/chat") {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		io.WriteString(w, "not json")
	}))
	defer srv.Close()
	tests := []struct {
		name string
		b    llm.Backend
		kind string
	}{
		{"OllamaStatus", &llm.Ollama{BaseURL: srv.URL, Model: "m"}, custody.EUNAVAILABLE},
		{"OpenAIGarbage", &llm.OpenAI{BaseURL: srv.URL + "/v1", Model: "m"}, custody.EINVALID},
		{"Unreachable", &llm.Ollama{BaseURL: "http://127.0.0.1:1", Model: "m"}, custody.EUNAVAILABLE},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.b.Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}})
			if got := custody.ErrorKind(err); got != tt.kind {
				t.Fatalf("kind = %q (%v), want %q", got, err, tt.kind)
			}
		})
	}
}

// textBackend answers every turn with a fixed text or error.
type textBackend struct {
	text string
	err  error
}

func (b textBackend) Name() string { return "stub" }
func (b textBackend) Chat(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: b.text}}, b.err
}

func TestCompose(t *testing.T) {
	errLong := errors.New("too long")
	check := func(s string) error {
		if len(s) > 10 {
			return errLong
		}
		return nil
	}
	tests := []struct {
		name        string
		b           llm.Backend
		wantText    string
		wantBackend string
		wantBreach  bool
	}{
		{"Template", llm.Template{}, "TEMPLATE", "template", false},
		{"Nil", nil, "TEMPLATE", "template", false},
		{"ModelOK", textBackend{text: "  short  "}, "short", "stub", false},
		{"ModelFailsCheck", textBackend{text: "far too long a text"}, "TEMPLATE", "template", true},
		{"ModelErrors", textBackend{err: custody.Errorf(custody.EUNAVAILABLE, "down")}, "TEMPLATE", "template", true},
		{"ModelEmpty", textBackend{}, "TEMPLATE", "template", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := llm.Compose(context.Background(), tt.b, llm.Prompt{User: "write"}, "TEMPLATE", check)
			if c.Text != tt.wantText || c.Backend != tt.wantBackend || (c.Breach != nil) != tt.wantBreach {
				t.Fatalf("Compose = %+v, want text %q backend %q breach %v", c, tt.wantText, tt.wantBackend, tt.wantBreach)
			}
		})
	}
	c := llm.Compose(context.Background(), textBackend{text: "far too long a text"}, llm.Prompt{}, "T", check)
	if !errors.Is(c.Breach, errLong) {
		t.Errorf("Breach = %v, want the check's error", c.Breach)
	}
}

func TestRouter(t *testing.T) {
	main, edge := textBackend{text: "main"}, &llm.Ollama{Model: "edge"}
	tests := []struct {
		name    string
		r       llm.Router
		routing string
		want    string
	}{
		{"ToolHopMain", llm.Router{Main: main, Edge: edge}, llm.HopTools, "stub"},
		{"LanguageHopEdge", llm.Router{Main: main, Edge: edge}, llm.HopLanguage, "ollama:edge"},
		{"LanguageHopFallback", llm.Router{Main: main}, llm.HopLanguage, "stub"},
		{"EmptyTemplate", llm.Router{}, llm.HopTools, "template"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.For(tt.routing).Name(); got != tt.want {
				t.Errorf("For(%q) = %q, want %q", tt.routing, got, tt.want)
			}
		})
	}
	if _, err := llm.NewRouter("ollama://h:1/m", "bogus://x/y"); custody.ErrorKind(err) != custody.EINVALID {
		t.Errorf("NewRouter with a bad edge url: %v", err)
	}
}
