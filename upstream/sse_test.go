package upstream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody"
)

// sseUpstream is an MCP server served over the legacy HTTP+SSE transport
// (MCP 2024-11-05) on a real port.
type sseUpstream struct {
	srv *httptest.Server

	mu      sync.Mutex
	headers []http.Header
}

// newSSEUpstream serves s with the go-sdk's SSE handler.
func newSSEUpstream(t *testing.T, s *mcp.Server) *sseUpstream {
	t.Helper()
	u := &sseUpstream{}
	h := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil)
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.headers = append(u.headers, r.Header.Clone())
		u.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		u.srv.CloseClientConnections()
		u.srv.Close()
	})
	return u
}

// Headers returns the headers of every request so far.
func (u *sseUpstream) Headers() []http.Header {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]http.Header(nil), u.headers...)
}

// TestSSETransport fronts a server that speaks only the legacy HTTP+SSE
// transport: its tools are listed and called through a Set, with the
// configured headers on every request, and the server's timeout bounds
// the tools whose policy sets none. Open's context has ended by the
// time of the call, so the call also shows that the event stream does
// not die with the context it was opened under.
func TestSSETransport(t *testing.T) {
	up := newSSEUpstream(t, echoServer(defaultDescription)())
	read := Policy{Access: custody.Read, Effect: custody.EffectNone, Approval: custody.NotRequired}
	blockPolicy := read
	blockPolicy.Timeout = 2 * time.Second
	s := openSet(t, Config{
		Servers:    []Server{{Name: "legacy", URL: up.srv.URL, SSE: true, Headers: map[string]string{"Authorization": "Bearer k-1"}, Timeout: 7 * time.Second}},
		Governance: Governance{"legacy__echo": read, "legacy__block": blockPolicy},
	})
	offers := map[string]Offer{}
	for _, o := range s.Offers() {
		offers[o.Exposed] = o
	}
	echo, ok := offers["legacy__echo"]
	if !ok || echo.Key != "legacy__echo" || echo.Upstream != "legacy" || echo.Tool.Description != defaultDescription {
		t.Fatalf("offers %+v: want legacy__echo governed", offers)
	}
	if echo.Policy.Timeout != 7*time.Second {
		t.Errorf("echo's timeout %v, want the server's 7s (its policy sets none)", echo.Policy.Timeout)
	}
	if b := offers["legacy__block"]; b.Policy.Timeout != 2*time.Second {
		t.Errorf("block's timeout %v, want its policy's own 2s", b.Policy.Timeout)
	}
	for i := range 3 {
		if r := call(t, s.conn("legacy"), "echo", `{"message":"over sse"}`); string(r.StructuredContent) != `{"echo":"over sse"}` {
			t.Fatalf("call %d: result %+v", i, r)
		}
	}
	hs := up.Headers()
	if len(hs) < 3 {
		t.Fatalf("%d requests: want the stream, the session's messages and the calls", len(hs))
	}
	for i, h := range hs {
		if h.Get("Authorization") != "Bearer k-1" {
			t.Errorf("request %d carries %v", i, h)
		}
	}
}

// TestTransportIsTheConfiguredOne dials each kind of HTTP server with
// the other transport: neither connects, so SSE chooses the transport.
func TestTransportIsTheConfiguredOne(t *testing.T) {
	sse := newSSEUpstream(t, echoServer(defaultDescription)())
	streamable := newHTTPUpstream(t, echoServer(defaultDescription))
	for _, tt := range []struct {
		name string
		srv  Server
	}{
		{"ErrStreamableAtSSE", Server{Name: "h", URL: sse.srv.URL}},
		{"ErrSSEAtStreamable", Server{Name: "h", URL: streamable.URL(), SSE: true}},
		{"ErrSSEClosedPort", Server{Name: "h", URL: "http://127.0.0.1:1/sse", SSE: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := Dial(ctx, tt.srv, ConnOptions{Required: true})
			if err == nil {
				c.Close()
				t.Fatal("dialled")
			}
			if !strings.Contains(err.Error(), `upstream "h"`) {
				t.Errorf("the error does not name the upstream: %v", err)
			}
		})
	}
}

// TestSSEDialGivesUpWithItsContext checks that a context that has ended
// stops an SSE connection before it opens.
func TestSSEDialGivesUpWithItsContext(t *testing.T) {
	up := newSSEUpstream(t, echoServer(defaultDescription)())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c, err := Dial(ctx, Server{Name: "h", URL: up.srv.URL, SSE: true}, ConnOptions{})
	if err == nil {
		c.Close()
		t.Fatal("dialled with a cancelled context")
	}
}
