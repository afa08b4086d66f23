package upstream

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody/downstream"
)

// TestAskOnlyTheSoleClient: a server's request of a client is asked of
// the one client whose calls are in flight, never guessed among several.
func TestAskOnlyTheSoleClient(t *testing.T) {
	c := &Conn{srv: Server{Name: "s"}}
	a, b := new(mcp.ServerSession), new(mcp.ServerSession)
	in := func(s *mcp.ServerSession) func() {
		_, done := c.flights.start(downstream.With(context.Background(), &downstream.Caller{Session: s}))
		return done
	}
	if _, err := c.sole(); err == nil || !strings.Contains(err.Error(), "no call of server \"s\" is in flight") {
		t.Errorf("none in flight: %v", err)
	}
	doneA1, doneA2 := in(a), in(a)
	if fl, err := c.sole(); err != nil || fl.caller.Session != a {
		t.Errorf("two calls of one client: %v", err)
	}
	doneB := in(b)
	if _, err := c.sole(); err == nil || !strings.Contains(err.Error(), "calls of 2 clients") {
		t.Errorf("two clients: %v", err)
	}
	doneA1()
	doneA2()
	if fl, err := c.sole(); err != nil || fl.caller.Session != b {
		t.Errorf("after a's calls ended: %v", err)
	}
	doneB()
	// A call from no MCP client (the HTTP API) is no one to ask.
	_, done := c.flights.start(context.Background())
	defer done()
	if _, err := c.sole(); err == nil {
		t.Error("a call without a client made one to ask")
	}
}

// TestProgressTokens: the server gets custody's token for a client that
// asked for progress, and the client's own never.
func TestProgressTokens(t *testing.T) {
	var f flights
	ctx := downstream.With(context.Background(), &downstream.Caller{Session: new(mcp.ServerSession), ProgressToken: 1.0})
	tok, done := f.start(ctx)
	defer done()
	if !strings.HasPrefix(tok, "custody-") || f.byToken(tok) == nil || f.byToken(1.0) != nil || f.byToken("custody-x") != nil {
		t.Fatalf("token %q", tok)
	}
	meta := withToken(map[string]any{"progressToken": 1.0, "k": "v", "io.modelcontextprotocol/protocolVersion": "2026-07-28"}, tok)
	if meta["progressToken"] != tok || meta["k"] != "v" || len(meta) != 2 {
		t.Errorf("meta %v", meta)
	}
	if m := withToken(map[string]any{"progressToken": 1.0}, ""); m != nil {
		t.Errorf("meta without a token %v", m)
	}
}
