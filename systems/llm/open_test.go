package llm_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/systems/llm"
)

func TestOpenShapes(t *testing.T) {
	tests := []struct {
		name, url   string
		want, base  string
		errMentions string // what the error names; "" when it opens
	}{
		{name: "OKTrimmed", url: "  template  ", want: "template"},
		{name: "OKTemplateScheme", url: "template://", want: "template"},
		{name: "OKSchemeCase", url: "OLLAMA://h:1/m", want: "ollama:m", base: "http://h:1"},
		{name: "OKOllamaNamespace", url: "ollama://h:1/library/gemma4:2b/", want: "ollama:library/gemma4:2b", base: "http://h:1"},
		{name: "OKOllamaQueryIgnored", url: "ollama://h:1/m?x=1", want: "ollama:m", base: "http://h:1"},
		{name: "OKOpenAINoVersion", url: "openai://h:1/m", want: "openai:m", base: "http://h:1"},
		{name: "OKOpenAIPrefix", url: "openai://h:1/proxy/m", want: "openai:m", base: "http://h:1/proxy"},
		{name: "OKOpenAIPrefixedV1", url: "openai://h:1/api/v1/org/m", want: "openai:org/m", base: "http://h:1/api/v1"},
		{name: "OKOpenAIV1NotSegment", url: "openai://h:1/xv1/m", want: "openai:m", base: "http://h:1/xv1"},
		{name: "OKOpenAIV1NotSegmentDeeper", url: "openai://h:1/xv1/org/m", want: "openai:m", base: "http://h:1/xv1/org"},
		{name: "OKOpenAITrailingSlash", url: "openais://h/v1/m/", want: "openai:m", base: "https://h/v1"},
		{name: "OKOpenAIModelNamedV1", url: "openai://h/v1/v1", want: "openai:v1", base: "http://h/v1"},
		{name: "ErrHTTPScheme", url: "http://h:1/m", errMentions: `"http"`},
		{name: "ErrNoScheme", url: "h:1/m", errMentions: "missing host"},
		{name: "ErrUnknownScheme", url: "grpc://h:1/m", errMentions: "unknown scheme \"grpc\""},
		{name: "ErrNoHostOpenAI", url: "openai:///v1/m", errMentions: "missing host"},
		{name: "ErrOllamaNoPath", url: "ollama://h:1", errMentions: "missing model"},
		{name: "ErrOpenAIRoot", url: "openai://h:1/", errMentions: "missing model"},
		{name: "ErrOpenAIV1Slash", url: "openais://h/v1/", errMentions: "openais://HOST:PORT/v1/MODEL"},
		{name: "ErrParse", url: "ollama://h/%zz", errMentions: "llm url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := llm.Open(tt.url)
			if tt.errMentions != "" {
				if custody.ErrorKind(err) != custody.EINVALID || b != nil || !strings.Contains(err.Error(), tt.errMentions) {
					t.Fatalf("Open(%q) = %v, %v; want EINVALID naming %s", tt.url, b, err, tt.errMentions)
				}
				return
			}
			if err != nil || b.Name() != tt.want {
				t.Fatalf("Open(%q) = %v, %v; want %s", tt.url, b, err, tt.want)
			}
			switch b := b.(type) {
			case *llm.Ollama:
				if b.BaseURL != tt.base || b.Client == nil || b.Client.Timeout != llm.DefaultTimeout {
					t.Errorf("Ollama %+v, want base %s and the default timeout", b, tt.base)
				}
			case *llm.OpenAI:
				if b.BaseURL != tt.base || b.Client == nil || b.Client.Timeout != llm.DefaultTimeout || b.APIKey != "" {
					t.Errorf("OpenAI %+v, want base %s and the default timeout", b, tt.base)
				}
			default:
				if tt.base != "" {
					t.Errorf("Open(%q) = %T", tt.url, b)
				}
			}
		})
	}
}

func TestNewRouter(t *testing.T) {
	tests := []struct {
		name, main, edge string
		tools, language  string // the backends For picks; "" when refused
	}{
		{"OKDefaults", "", "", "template", "template"},
		{"OKMainOnly", "ollama://h:1/big", "", "ollama:big", "ollama:big"},
		{"OKEdge", "ollama://h:1/big", "openai://e:2/v1/small", "ollama:big", "openai:small"},
		{"OKEdgeOverTemplate", "", "ollama://e:2/small", "template", "ollama:small"},
		{"ErrMain", "gopher://h/m", "ollama://e:2/small", "", ""},
		{"ErrEdge", "ollama://h:1/big", "ollama://e:2/", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := llm.NewRouter(tt.main, tt.edge)
			if tt.tools == "" {
				if custody.ErrorKind(err) != custody.EINVALID || !reflect.DeepEqual(r, llm.Router{}) {
					t.Fatalf("NewRouter = %+v, %v; want EINVALID", r, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := r.For(llm.HopTools).Name(); got != tt.tools {
				t.Errorf("tool hop on %s, want %s", got, tt.tools)
			}
			if got := r.For(llm.HopLanguage).Name(); got != tt.language {
				t.Errorf("language hop on %s, want %s", got, tt.language)
			}
			if got := r.For("unknown_routing").Name(); got != tt.tools {
				t.Errorf("unknown routing on %s, want the main backend %s", got, tt.tools)
			}
		})
	}
	if got := (llm.Router{Edge: textBackend{}}).For(llm.HopTools).Name(); got != "template" {
		t.Errorf("a tool hop with only an edge backend runs on %s, want template", got)
	}
}

// recorder answers with a fixed reply and keeps the request it was sent.
type recorder struct {
	reply string
	err   error
	got   *llm.Request
}

func (r recorder) Name() string { return "rec" }
func (r recorder) Chat(_ context.Context, req llm.Request) (llm.Response, error) {
	*r.got = req
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: r.reply}}, r.err
}

func TestComposeRequestAndBreach(t *testing.T) {
	down := custody.Errorf(custody.EUNAVAILABLE, "down")
	refused := custody.Errorf(custody.EINVALID, "text refused: number 7")
	tests := []struct {
		name     string
		prompt   llm.Prompt
		reply    string
		chatErr  error
		check    func(string) error
		text     string
		breachIs error  // the cause Breach wraps; nil when none
		breachOf string // what Breach says
		messages []llm.Message
	}{
		{name: "OKNoSystem", prompt: llm.Prompt{User: "write", MaxTokens: 40}, reply: "\n done \t", text: "done",
			messages: []llm.Message{{Role: llm.RoleUser, Content: "write"}}},
		{name: "OKSystem", prompt: llm.Prompt{System: "rules", User: "write"}, reply: "done", text: "done",
			messages: []llm.Message{{Role: llm.RoleSystem, Content: "rules"}, {Role: llm.RoleUser, Content: "write"}}},
		{name: "OKCheckSeesTrimmed", prompt: llm.Prompt{User: "w"}, reply: "  7 ", text: "7",
			check: func(s string) error {
				if s != "7" {
					return refused
				}
				return nil
			}, messages: []llm.Message{{Role: llm.RoleUser, Content: "w"}}},
		{name: "ErrBlank", prompt: llm.Prompt{User: "w"}, reply: " \n ", text: "TEMPLATE", breachOf: "rec: empty reply",
			messages: []llm.Message{{Role: llm.RoleUser, Content: "w"}}},
		{name: "ErrChat", prompt: llm.Prompt{User: "w"}, reply: "ignored", chatErr: down, text: "TEMPLATE", breachIs: down, breachOf: "rec: ",
			messages: []llm.Message{{Role: llm.RoleUser, Content: "w"}}},
		{name: "ErrCheck", prompt: llm.Prompt{User: "w"}, reply: "7 crashes", check: func(string) error { return refused },
			text: "TEMPLATE", breachIs: refused, breachOf: "rec: ", messages: []llm.Message{{Role: llm.RoleUser, Content: "w"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got llm.Request
			c := llm.Compose(context.Background(), recorder{reply: tt.reply, err: tt.chatErr, got: &got}, tt.prompt, "TEMPLATE", tt.check)
			if c.Text != tt.text {
				t.Errorf("Text = %q, want %q", c.Text, tt.text)
			}
			if !reflect.DeepEqual(got.Messages, tt.messages) || got.MaxTokens != tt.prompt.MaxTokens || got.Tools != nil {
				t.Errorf("request %+v, want messages %+v and MaxTokens %d", got, tt.messages, tt.prompt.MaxTokens)
			}
			if tt.breachOf == "" {
				if c.Breach != nil || c.Backend != "rec" {
					t.Errorf("Composed = %+v, want the model's text", c)
				}
				return
			}
			if c.Backend != llm.TemplateName || c.Breach == nil || !strings.HasPrefix(c.Breach.Error(), tt.breachOf) {
				t.Fatalf("Composed = %+v, want the template and a breach saying %q", c, tt.breachOf)
			}
			if tt.breachIs != nil && !errors.Is(c.Breach, tt.breachIs) {
				t.Errorf("Breach %v does not wrap %v", c.Breach, tt.breachIs)
			}
		})
	}
}
