package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody"
)

// bigAnswer is the size of the answer of the tool "big": far over the
// cap and its slack.
const bigAnswer = 50 << 20

// writeCounter counts what a handler wrote, and whether a write failed
// (the client hung up before reading it all).
type writeCounter struct {
	mu      sync.Mutex
	written int64
	failed  bool
}

// wantCut waits for the server's write of an answer of size bytes to
// fail, and fails unless it failed before all of it was written: custody
// stopped reading.
func (c *writeCounter) wantCut(t *testing.T, size int64) {
	t.Helper()
	waitFor(t, "the server's write of the answer to fail", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.failed
	})
	c.mu.Lock()
	written := c.written
	c.mu.Unlock()
	if written >= size {
		t.Fatalf("the server wrote %d bytes: custody read the whole answer", written)
	}
}

func (c *writeCounter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&countingWriter{ResponseWriter: w, c: c}, r)
	})
}

type countingWriter struct {
	http.ResponseWriter
	c *writeCounter
}

func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.c.mu.Lock()
	w.c.written += int64(n)
	w.c.failed = w.c.failed || err != nil
	w.c.mu.Unlock()
	return n, err
}

func (w *countingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// TestResultOverTheCapNotReadWhole: an HTTP server answering 50 MB to a
// tool whose cap is 1 KiB is cut off after the cap and its slack: the
// call is refused as too large, the server's write fails (custody hung
// up), and the next call is served once the session is back. Both the
// event-stream and the JSON answers of streamable HTTP are cut.
func TestResultOverTheCapNotReadWhole(t *testing.T) {
	for _, jsonResponse := range []bool{false, true} {
		name := map[bool]string{false: "EventStream", true: "JSON"}[jsonResponse]
		t.Run(name, func(t *testing.T) {
			server := mcp.NewServer(&mcp.Implementation{Name: "big", Version: "1"}, nil)
			addEcho(server, defaultDescription)
			mcp.AddTool(server, &mcp.Tool{Name: "big"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", bigAnswer)}}}, nil, nil
			})
			var counter writeCounter
			h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{JSONResponse: jsonResponse})
			srv := httptest.NewServer(counter.wrap(h))
			t.Cleanup(srv.Close)
			read := Policy{Access: custody.Read, Effect: custody.EffectNone, Approval: custody.NotRequired}
			s := openSet(t, Config{Servers: []Server{{Name: "b", URL: srv.URL}}, Governance: Governance{"b__*": read}})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			_, err := s.mcpHandler("b", "big", 1024)(ctx, custody.Call{Tool: "b__big", Args: json.RawMessage(`{}`)})
			if custody.ErrorKind(err) != custody.EINVALID || !strings.Contains(err.Error(), "over the 1024 bytes its policy allows") {
				t.Fatalf("a 50 MB answer: %v", err)
			}
			counter.wantCut(t, bigAnswer)
			out, err := s.mcpHandler("b", "echo", DefaultMaxResultBytes)(ctx, custody.Call{Args: json.RawMessage(`{"message":"after"}`)})
			if err != nil || !strings.Contains(string(out), "after") {
				t.Fatalf("the next call: %s %v", out, err)
			}
		})
	}
}
