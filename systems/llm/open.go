package llm

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/custody-dev/custody"
)

// TemplateName is the name of the deterministic template backend.
const TemplateName = "template"

// DefaultTimeout bounds one chat request of the HTTP backends that Open
// returns.
const DefaultTimeout = 120 * time.Second

// Template is the deterministic default backend: it never calls a model.
// Composer hops use their template text; Chat answers with an empty final
// message, so a tool-calling loop on it ends at once.
type Template struct{}

var _ Backend = Template{}

// Name returns "template".
func (Template) Name() string { return TemplateName }

// Chat returns an empty assistant message.
func (Template) Chat(context.Context, Request) (Response, error) {
	return Response{Message: Message{Role: RoleAssistant}}, nil
}

// IsTemplate reports whether b is the template backend or nil: a backend
// that does not ask a model.
func IsTemplate(b Backend) bool {
	if b == nil {
		return true
	}
	_, ok := b.(Template)
	return ok
}

// Open returns the backend a URL-like name selects:
//
//	"" or "template"                  the deterministic template backend
//	"ollama://HOST:PORT/MODEL"        Ollama /api/chat over http
//	"openai://HOST:PORT/v1/MODEL"     an OpenAI-compatible server over http
//	"openais://HOST/v1/MODEL"         the same over https
//
// The model name may hold ':' (gemma4:latest) and, for OpenAI-compatible
// servers, '/' (org/model). Errors are EINVALID and name the bad part.
func Open(rawURL string) (Backend, error) {
	s := strings.TrimSpace(rawURL)
	if s == "" || s == TemplateName || s == TemplateName+"://" {
		return Template{}, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, custody.Errorf(custody.EINVALID, "llm url %q: %v", s, err)
	}
	if u.Host == "" {
		return nil, custody.Errorf(custody.EINVALID, "llm url %q: missing host (want SCHEME://HOST:PORT/...)", s)
	}
	client := &http.Client{Timeout: DefaultTimeout}
	switch u.Scheme {
	case "ollama":
		return openOllama(u, client)
	case "openai", "openais":
		return openOpenAI(u, client)
	default:
		return nil, custody.Errorf(custody.EINVALID,
			"llm url %q: unknown scheme %q (want template, ollama, openai or openais)", s, u.Scheme)
	}
}

func openOllama(u *url.URL, client *http.Client) (Backend, error) {
	model := strings.Trim(u.Path, "/")
	if model == "" {
		return nil, custody.Errorf(custody.EINVALID, "llm url %q: missing model (want ollama://HOST:PORT/MODEL)", u.String())
	}
	return &Ollama{BaseURL: "http://" + u.Host, Model: model, Client: client}, nil
}

func openOpenAI(u *url.URL, client *http.Client) (Backend, error) {
	scheme := "http"
	if u.Scheme == "openais" {
		scheme = "https"
	}
	path := strings.Trim(u.Path, "/")
	var base, model string
	if i := strings.Index(path+"/", "v1/"); i >= 0 && (i == 0 || path[i-1] == '/') {
		base, model = path[:i+2], strings.Trim(path[min(i+3, len(path)):], "/")
	} else if j := strings.LastIndex(path, "/"); j >= 0 {
		base, model = path[:j], path[j+1:]
	} else {
		model = path
	}
	if model == "" {
		return nil, custody.Errorf(custody.EINVALID, "llm url %q: missing model (want %s://HOST:PORT/v1/MODEL)", u.String(), u.Scheme)
	}
	baseURL := scheme + "://" + u.Host
	if base != "" {
		baseURL += "/" + base
	}
	return &OpenAI{BaseURL: baseURL, Model: model, Client: client}, nil
}
