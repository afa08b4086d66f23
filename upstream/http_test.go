package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/custody-dev/custody"
)

// received is what an HTTP tool's endpoint was sent.
type received struct {
	method, path string
	header       http.Header
	body         []byte
}

// endpoint serves answer and keeps what each request sent.
func endpoint(t *testing.T, answer http.HandlerFunc) (*httptest.Server, chan received) {
	t.Helper()
	got := make(chan received, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- received{r.Method, r.URL.Path, r.Header.Clone(), b}
		answer(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// reply answers with status and body.
func reply(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// run calls h's handler with args.
func run(h HTTPTool, client *http.Client, args string) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return h.handler(client)(ctx, custody.Call{Tool: h.Name, Args: json.RawMessage(args)})
}

func TestHTTPToolSends(t *testing.T) {
	srv, got := endpoint(t, reply(200, `{"price": 12.5}`))
	args := `{ "sku" : "A-1",  "n": 1.50 }`
	t.Run("ExactBytesByPost", func(t *testing.T) {
		out, err := run(HTTPTool{Name: "quote", URL: srv.URL + "/quote"}, http.DefaultClient, args)
		if err != nil || string(out) != `{"price": 12.5}` {
			t.Fatalf("reply %s %v", out, err)
		}
		r := <-got
		if r.method != http.MethodPost || r.path != "/quote" || string(r.body) != args {
			t.Errorf("sent %s %s %q, want POST /quote and the exact argument bytes", r.method, r.path, r.body)
		}
		if r.header.Get("Content-Type") != "application/json" || r.header.Get("Accept") != "application/json" {
			t.Errorf("headers %v", r.header)
		}
	})
	t.Run("MethodAndHeaders", func(t *testing.T) {
		h := HTTPTool{Name: "quote", URL: srv.URL, Method: http.MethodPut,
			Headers: map[string]string{"X-Api-Key": "k-123", "Accept": "application/vnd.quote+json"}}
		if _, err := run(h, http.DefaultClient, `{}`); err != nil {
			t.Fatal(err)
		}
		r := <-got
		if r.method != http.MethodPut || r.header.Get("X-Api-Key") != "k-123" || r.header.Get("Accept") != "application/vnd.quote+json" {
			t.Errorf("sent %s with %v", r.method, r.header)
		}
	})
	t.Run("TheConfiguredClient", func(t *testing.T) {
		var used atomic.Int64
		client := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
			used.Add(1)
			return http.DefaultTransport.RoundTrip(r)
		})}
		s := openSet(t, Config{HTTPClient: client, HTTPTools: []HTTPTool{quoteTool(srv.URL)},
			Governance: Governance{"quote": {Access: custody.Read, Effect: custody.EffectNone, Approval: custody.NotRequired}}})
		tools, err := s.Tools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tools[0].Handler(context.Background(), custody.Call{Args: json.RawMessage(`{"sku":"A"}`)}); err != nil || used.Load() != 1 {
			t.Errorf("call: %v; the configured client was used %d times", err, used.Load())
		}
		<-got
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestHTTPToolRefusesItsReply(t *testing.T) {
	long := strings.Repeat("z", 1000)
	for _, tt := range []struct {
		name   string
		answer http.HandlerFunc
		says   string
	}{
		{"ErrStatus", reply(http.StatusServiceUnavailable, `{"error":"down for maintenance"}`), "503"},
		{"ErrNotFound", reply(http.StatusNotFound, "no such quote"), "404"},
		{"ErrNotJSON", reply(200, "<html>price: 12</html>"), "not JSON"},
		{"ErrTrailingData", reply(200, `{"price":1} {"price":2}`), "not JSON"},
		{"ErrEmpty", reply(200, ""), "not JSON"},
		{"ErrTooLarge", func(w http.ResponseWriter, _ *http.Request) {
			w.Write([]byte(`"`))
			w.Write(bytes.Repeat([]byte("x"), maxReply))
			w.Write([]byte(`"`))
		}, "larger than"},
		{"ErrLongBodyCut", reply(500, long), "500"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := endpoint(t, tt.answer)
			out, err := run(HTTPTool{Name: "quote", URL: srv.URL}, http.DefaultClient, `{}`)
			if err == nil {
				t.Fatalf("a reply to refuse was taken: %.100s", out)
			}
			if !strings.Contains(err.Error(), tt.says) || !strings.Contains(err.Error(), "http tool quote") {
				t.Errorf("error %.300q does not say %q", err, tt.says)
			}
			if len(err.Error()) > 400 {
				t.Errorf("the error carries %d bytes of the reply", len(err.Error()))
			}
		})
	}
	t.Run("LargestReplyTaken", func(t *testing.T) {
		body := `"` + strings.Repeat("x", maxReply-2) + `"`
		srv, _ := endpoint(t, reply(200, body))
		if out, err := run(HTTPTool{Name: "quote", URL: srv.URL}, http.DefaultClient, `{}`); err != nil || len(out) != maxReply {
			t.Errorf("a reply of exactly %d bytes: %d bytes, %v", maxReply, len(out), err)
		}
	})
}

func TestHTTPToolFails(t *testing.T) {
	t.Run("ErrDeadline", func(t *testing.T) {
		srv, _ := endpoint(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := HTTPTool{Name: "slow", URL: srv.URL}.handler(http.DefaultClient)(ctx, custody.Call{Args: json.RawMessage(`{}`)})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a reply that never comes: %v", err)
		}
	})
	t.Run("ErrUnreachable", func(t *testing.T) {
		if _, err := run(HTTPTool{Name: "gone", URL: "http://127.0.0.1:1/"}, http.DefaultClient, `{}`); err == nil || !strings.Contains(err.Error(), "http tool gone") {
			t.Errorf("an endpoint nobody listens on: %v", err)
		}
	})
	t.Run("ErrBadURL", func(t *testing.T) {
		if _, err := run(HTTPTool{Name: "bad", URL: "http://[::1"}, http.DefaultClient, `{}`); err == nil {
			t.Error("a malformed URL was called")
		}
	})
	t.Run("ErrBadMethod", func(t *testing.T) {
		if _, err := run(HTTPTool{Name: "bad", URL: "http://127.0.0.1:1/", Method: "NOT A METHOD"}, http.DefaultClient, `{}`); err == nil {
			t.Error("a malformed method was sent")
		}
	})
}
