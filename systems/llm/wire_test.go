package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/systems/llm"
)

// exchange is what a model server stub saw of one request.
type exchange struct {
	method, path, contentType, auth string
	body                            any
}

// modelServer answers every request with status and reply, and records
// what it was sent.
func modelServer(t *testing.T, status int, reply string) (*httptest.Server, *exchange) {
	t.Helper()
	seen := &exchange{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		*seen = exchange{method: r.Method, path: r.URL.Path, contentType: r.Header.Get("Content-Type"), auth: r.Header.Get("Authorization")}
		if err := json.Unmarshal(raw, &seen.body); err != nil {
			t.Errorf("request body is not JSON: %v: %s", err, raw)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, reply)
	}))
	t.Cleanup(srv.Close)
	return srv, seen
}

// sameJSON fails the test unless got, decoded, equals the JSON text want.
func sameJSON(t *testing.T, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want %s: %v", want, err)
	}
	if !reflect.DeepEqual(got, w) {
		g, _ := json.Marshal(got)
		t.Errorf("request\n got %s\nwant %s", g, want)
	}
}

// conversation is a turn with a system prompt, a tool call and its answer.
func conversation(args string, maxTokens int, tools bool) llm.Request {
	r := llm.Request{
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "be brief"},
			{Role: llm.RoleUser, Content: "how is I-94?"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c0", Name: "detect", Arguments: json.RawMessage(args)}}},
			{Role: llm.RoleTool, Name: "detect", ToolCallID: "c0", Content: `{"ok":true}`},
		},
		MaxTokens: maxTokens,
	}
	if tools {
		r.Tools = []llm.ToolDef{{Name: "detect", Description: "find events", Parameters: json.RawMessage(`{"type":"object"}`)}}
	}
	return r
}

func TestOllamaRequestWire(t *testing.T) {
	const head = `{"role":"system","content":"be brief"},{"role":"user","content":"how is I-94?"},`
	const answer = `{"role":"tool","content":"{\"ok\":true}","tool_name":"detect"}`
	tests := []struct {
		name      string
		req       llm.Request
		want      string
		trailing  bool
		modelName string
	}{
		{"OKFull", conversation(`{"x":1}`, 50, true), `{"model":"gemma4","stream":false,"options":{"num_predict":50},
			"tools":[{"type":"function","function":{"name":"detect","description":"find events","parameters":{"type":"object"}}}],
			"messages":[` + head + `{"role":"assistant","content":"","tool_calls":[{"id":"c0","function":{"name":"detect","arguments":{"x":1}}}]},` + answer + `]}`, false, "gemma4"},
		{"OKNoToolsNoLimit", conversation(`{"x":1}`, 0, false), `{"model":"gemma4","stream":false,
			"messages":[` + head + `{"role":"assistant","content":"","tool_calls":[{"id":"c0","function":{"name":"detect","arguments":{"x":1}}}]},` + answer + `]}`, true, "gemma4"},
		{"OKArgumentsNotObject", conversation(`[1,2]`, 0, false), `{"model":"gemma4","stream":false,
			"messages":[` + head + `{"role":"assistant","content":"","tool_calls":[{"id":"c0","function":{"name":"detect","arguments":{}}}]},` + answer + `]}`, false, "gemma4"},
		{"OKArgumentsInvalid", conversation(`{"x":`, 0, false), `{"model":"gemma4","stream":false,
			"messages":[` + head + `{"role":"assistant","content":"","tool_calls":[{"id":"c0","function":{"name":"detect","arguments":{}}}]},` + answer + `]}`, false, "gemma4"},
		{"OKArgumentsEmpty", conversation(``, 0, false), `{"model":"gemma4","stream":false,
			"messages":[` + head + `{"role":"assistant","content":"","tool_calls":[{"id":"c0","function":{"name":"detect","arguments":{}}}]},` + answer + `]}`, false, "gemma4"},
		{"OKArgumentsSpaced", conversation(`  {"x": 1}`, 0, false), `{"model":"gemma4","stream":false,
			"messages":[` + head + `{"role":"assistant","content":"","tool_calls":[{"id":"c0","function":{"name":"detect","arguments":{"x":1}}}]},` + answer + `]}`, false, "gemma4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, seen := modelServer(t, 200, `{"message":{"role":"assistant","content":"ok"},"done":true}`)
			base := srv.URL
			if tt.trailing {
				base += "/"
			}
			b := &llm.Ollama{BaseURL: base, Model: tt.modelName}
			if _, err := b.Chat(context.Background(), tt.req); err != nil {
				t.Fatal(err)
			}
			if seen.method != "POST" || seen.path != "/api/chat" || seen.contentType != "application/json" || seen.auth != "" {
				t.Errorf("request %s %s, type %q, auth %q", seen.method, seen.path, seen.contentType, seen.auth)
			}
			sameJSON(t, seen.body, tt.want)
		})
	}
}

func TestOllamaReplies(t *testing.T) {
	tests := []struct {
		name   string
		status int
		reply  string
		want   llm.Message
		kind   string // the error kind; "" when the reply is read
	}{
		{"OKText", 200, `{"model":"m","message":{"role":"assistant","content":"Slow near MM88."},"done":true,"total_duration":5}`,
			llm.Message{Role: "assistant", Content: "Slow near MM88."}, ""},
		{"OKRoleAlwaysAssistant", 200, `{"message":{"role":"user","content":"x"},"done":true}`,
			llm.Message{Role: "assistant", Content: "x"}, ""},
		{"OKCallIDsFilled", 200, `{"message":{"role":"assistant","content":"","tool_calls":[
			{"function":{"name":"a","arguments":{"k" : [1, 2]}}},{"id":"own","function":{"name":"b","arguments":{}}},{"function":{"name":"c","arguments":{}}}]},"done":true}`,
			llm.Message{Role: "assistant", ToolCalls: []llm.ToolCall{
				{ID: "call_0", Name: "a", Arguments: json.RawMessage(`{"k" : [1, 2]}`)},
				{ID: "own", Name: "b", Arguments: json.RawMessage(`{}`)},
				{ID: "call_2", Name: "c", Arguments: json.RawMessage(`{}`)}}}, ""},
		{"OKArgumentsMissing", 200, `{"message":{"role":"assistant","tool_calls":[{"function":{"name":"a"}}]}}`,
			llm.Message{Role: "assistant", ToolCalls: []llm.ToolCall{{ID: "call_0", Name: "a"}}}, ""},
		{"OKTextAndCall", 200, `{"message":{"content":"checking","tool_calls":[{"function":{"name":"a","arguments":{"q":"é"}}}]}}`,
			llm.Message{Role: "assistant", Content: "checking", ToolCalls: []llm.ToolCall{{ID: "call_0", Name: "a", Arguments: json.RawMessage(`{"q":"é"}`)}}}, ""},
		{"ErrNotFound", 404, `{"error":"model \"m\" not found, try pulling it first"}`, llm.Message{}, custody.EUNAVAILABLE},
		{"ErrServer", 500, `{"error":"out of memory"}`, llm.Message{}, custody.EUNAVAILABLE},
		{"ErrBadGateway", 502, `<html>bad gateway</html>`, llm.Message{}, custody.EUNAVAILABLE},
		{"ErrTruncated", 200, `{"message":{"role":"assistant","content":"Slow`, llm.Message{}, custody.EINVALID},
		{"ErrStreamed", 200, "{\"message\":{\"content\":\"a\"},\"done\":false}\n{\"message\":{\"content\":\"b\"},\"done\":true}\n", llm.Message{}, custody.EINVALID},
		{"ErrMessageNotObject", 200, `{"message":"hi","done":true}`, llm.Message{}, custody.EINVALID},
		{"ErrArgumentsNotJSON", 200, `{"message":{"tool_calls":[{"function":{"name":"a","arguments":{x}}}]}}`, llm.Message{}, custody.EINVALID},
		{"ErrEmptyBody", 200, ``, llm.Message{}, custody.EINVALID},
		{"ErrHTML", 200, `<html></html>`, llm.Message{}, custody.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := modelServer(t, tt.status, tt.reply)
			resp, err := (&llm.Ollama{BaseURL: srv.URL, Model: "m"}).Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}})
			if tt.kind != "" {
				if got := custody.ErrorKind(err); got != tt.kind {
					t.Fatalf("Chat = %+v, %v; want kind %s", resp, err, tt.kind)
				}
				if strings.Contains(custody.ErrorMessage(err), tt.reply) && tt.reply != "" {
					t.Errorf("the safe message carries the server's body: %q", custody.ErrorMessage(err))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(resp.Message, tt.want) {
				t.Errorf("message\n got %+v\nwant %+v", resp.Message, tt.want)
			}
		})
	}
}

func TestOpenAIRequestWire(t *testing.T) {
	const head = `{"role":"system","content":"be brief"},{"role":"user","content":"how is I-94?"},`
	const answer = `{"role":"tool","content":"{\"ok\":true}","tool_call_id":"c0","name":"detect"}`
	tests := []struct {
		name, key string
		req       llm.Request
		want      string
	}{
		{"OKFull", "sk-1", conversation(`{"x": 1}`, 50, true), `{"model":"m","stream":false,"max_tokens":50,
			"tools":[{"type":"function","function":{"name":"detect","description":"find events","parameters":{"type":"object"}}}],
			"messages":[` + head + `{"role":"assistant","content":null,"tool_calls":[{"id":"c0","type":"function","function":{"name":"detect","arguments":"{\"x\": 1}"}}]},` + answer + `]}`},
		{"OKNoToolsNoLimitNoKey", "", conversation(`[1]`, 0, false), `{"model":"m","stream":false,
			"messages":[` + head + `{"role":"assistant","content":null,"tool_calls":[{"id":"c0","type":"function","function":{"name":"detect","arguments":"[1]"}}]},` + answer + `]}`},
		{"OKAssistantTextWithCall", "", llm.Request{Messages: []llm.Message{
			{Role: llm.RoleAssistant, Content: "checking", ToolCalls: []llm.ToolCall{{ID: "c1", Name: "a", Arguments: json.RawMessage(`{}`)}}}}},
			`{"model":"m","stream":false,"messages":[{"role":"assistant","content":"checking","tool_calls":[{"id":"c1","type":"function","function":{"name":"a","arguments":"{}"}}]}]}`},
		{"OKEmptyContentKept", "", llm.Request{Messages: []llm.Message{{Role: llm.RoleUser}, {Role: llm.RoleAssistant}}},
			`{"model":"m","stream":false,"messages":[{"role":"user","content":""},{"role":"assistant","content":""}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, seen := modelServer(t, 200, `{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
			b := &llm.OpenAI{BaseURL: srv.URL + "/v1/", Model: "m", APIKey: tt.key}
			if _, err := b.Chat(context.Background(), tt.req); err != nil {
				t.Fatal(err)
			}
			wantAuth := ""
			if tt.key != "" {
				wantAuth = "Bearer " + tt.key
			}
			if seen.method != "POST" || seen.path != "/v1/chat/completions" || seen.contentType != "application/json" || seen.auth != wantAuth {
				t.Errorf("request %s %s, type %q, auth %q", seen.method, seen.path, seen.contentType, seen.auth)
			}
			sameJSON(t, seen.body, tt.want)
		})
	}
}

func TestOpenAIReplies(t *testing.T) {
	tests := []struct {
		name   string
		status int
		reply  string
		want   llm.Message
		kind   string // the error kind; "" when the reply is read
	}{
		{"OKText", 200, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Slow."},"finish_reason":"stop"}],"usage":{"total_tokens":3}}`,
			llm.Message{Role: "assistant", Content: "Slow."}, ""},
		{"OKNullContent", 200, `{"choices":[{"message":{"role":"assistant","content":null}}]}`, llm.Message{Role: "assistant"}, ""},
		{"OKFirstChoice", 200, `{"choices":[{"message":{"content":"one"}},{"message":{"content":"two"}}]}`, llm.Message{Role: "assistant", Content: "one"}, ""},
		{"OKArgumentsKept", 200, `{"choices":[{"message":{"content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"a","arguments":"{\"k\" : [1,2]}"}},{"id":"call_2","type":"function","function":{"name":"b","arguments":"not json"}}]},"finish_reason":"tool_calls"}]}`,
			llm.Message{Role: "assistant", ToolCalls: []llm.ToolCall{
				{ID: "call_1", Name: "a", Arguments: json.RawMessage(`{"k" : [1,2]}`)},
				{ID: "call_2", Name: "b", Arguments: json.RawMessage(`not json`)}}}, ""},
		{"ErrNoChoices", 200, `{"choices":[]}`, llm.Message{}, custody.EINVALID},
		{"ErrChoicesMissing", 200, `{"id":"x"}`, llm.Message{}, custody.EINVALID},
		{"ErrArgumentsObject", 200, `{"choices":[{"message":{"tool_calls":[{"id":"c","function":{"name":"a","arguments":{"k":1}}}]}}]}`, llm.Message{}, custody.EINVALID},
		{"ErrContentNotString", 200, `{"choices":[{"message":{"content":["a"]}}]}`, llm.Message{}, custody.EINVALID},
		{"ErrTruncated", 200, `{"choices":[{"message":`, llm.Message{}, custody.EINVALID},
		{"ErrStreamChunks", 200, "data: {\"choices\":[]}\n\ndata: [DONE]\n\n", llm.Message{}, custody.EINVALID},
		{"ErrNoContent", 204, ``, llm.Message{}, custody.EINVALID},
		{"ErrUnauthorized", 401, `{"error":{"message":"Incorrect API key sk-secret","type":"invalid_request_error"}}`, llm.Message{}, custody.EUNAVAILABLE},
		{"ErrRateLimited", 429, `{"error":{"message":"slow down"}}`, llm.Message{}, custody.EUNAVAILABLE},
		{"ErrServer", 503, `overloaded`, llm.Message{}, custody.EUNAVAILABLE},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := modelServer(t, tt.status, tt.reply)
			resp, err := (&llm.OpenAI{BaseURL: srv.URL + "/v1", Model: "m"}).Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}})
			if tt.kind != "" {
				if got := custody.ErrorKind(err); got != tt.kind {
					t.Fatalf("Chat = %+v, %v; want kind %s", resp, err, tt.kind)
				}
				if msg := custody.ErrorMessage(err); strings.Contains(msg, "secret") || strings.Contains(msg, "slow down") {
					t.Errorf("the safe message carries the server's body: %q", msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(resp.Message, tt.want) {
				t.Errorf("message\n got %+v\nwant %+v", resp.Message, tt.want)
			}
		})
	}
}

// TestErrorStatusKeepsBodyHead: an error status names the status in the
// message and keeps the head of the body, and no more, as the cause.
func TestErrorStatusKeepsBodyHead(t *testing.T) {
	srv, _ := modelServer(t, 500, strings.Repeat("e", 1000))
	_, err := (&llm.Ollama{BaseURL: srv.URL, Model: "m"}).Chat(context.Background(), llm.Request{})
	var ce *custody.Error
	if !errors.As(err, &ce) || ce.Kind != custody.EUNAVAILABLE || !strings.Contains(ce.Message, "500 Internal Server Error") {
		t.Fatalf("Chat = %v", err)
	}
	if ce.Err == nil || ce.Err.Error() != "body: "+strings.Repeat("e", 300) {
		t.Errorf("cause %v, want the first 300 bytes of the body", ce.Err)
	}
}

// TestReplyCap: a reply past the cap is not read to its end, and what was
// read is not the expected JSON.
func TestReplyCap(t *testing.T) {
	srv, _ := modelServer(t, 200, `{"message":{"content":"`+strings.Repeat("a", 8<<20)+`"}}`)
	_, err := (&llm.Ollama{BaseURL: srv.URL, Model: "m"}).Chat(context.Background(), llm.Request{})
	if custody.ErrorKind(err) != custody.EINVALID {
		t.Fatalf("Chat of an oversized reply = %v, want EINVALID", err)
	}
}

func TestTransportErrors(t *testing.T) {
	srv, _ := modelServer(t, 200, `{}`)
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		b    llm.Backend
		kind string
	}{
		{"ErrCanceledOllama", canceled, &llm.Ollama{BaseURL: srv.URL, Model: "m"}, custody.EUNAVAILABLE},
		{"ErrCanceledOpenAI", canceled, &llm.OpenAI{BaseURL: srv.URL, Model: "m"}, custody.EUNAVAILABLE},
		{"ErrUnreachableOpenAI", context.Background(), &llm.OpenAI{BaseURL: "http://127.0.0.1:1/v1", Model: "m"}, custody.EUNAVAILABLE},
		{"ErrBadBaseURL", context.Background(), &llm.OpenAI{BaseURL: "http://[::1/v1", Model: "m"}, custody.EINVALID},
		{"ErrNoScheme", context.Background(), &llm.Ollama{BaseURL: "localhost:11434", Model: "m"}, custody.EUNAVAILABLE},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.b.Chat(tt.ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}})
			if got := custody.ErrorKind(err); got != tt.kind {
				t.Fatalf("Chat = %v, want kind %s", err, tt.kind)
			}
		})
	}
	_, err := (&llm.Ollama{BaseURL: srv.URL, Model: "m"}).Chat(canceled, llm.Request{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("a canceled call's cause %v, want context.Canceled", err)
	}
}

func TestTemplateChat(t *testing.T) {
	resp, err := llm.Template{}.Chat(context.Background(), conversation(`{}`, 10, true))
	if err != nil || !reflect.DeepEqual(resp.Message, llm.Message{Role: llm.RoleAssistant}) {
		t.Errorf("Template.Chat = %+v, %v; want an empty assistant message", resp, err)
	}
	if !llm.IsTemplate(llm.Template{}) || !llm.IsTemplate(nil) || llm.IsTemplate(&llm.Ollama{}) || llm.IsTemplate(&llm.OpenAI{}) {
		t.Error("IsTemplate is wrong")
	}
	if got := (&llm.OpenAI{Model: "org/m"}).Name(); got != "openai:org/m" {
		t.Errorf("OpenAI.Name = %q", got)
	}
}

// TestOllamaErrorInAnOKAnswer: an Ollama answer that says what went
// wrong under "error", with status 200, is a failure, not an empty reply.
func TestOllamaErrorInAnOKAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"error":"model \"gemma\" not found, try pulling it first"}`)
	}))
	defer srv.Close()
	_, err := (&llm.Ollama{BaseURL: srv.URL, Model: "gemma", Client: srv.Client()}).Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	if custody.ErrorKind(err) != custody.EUNAVAILABLE || !strings.Contains(err.Error(), "not found, try pulling it first") {
		t.Errorf("err = %v, want unavailable naming the server's error", err)
	}
}
