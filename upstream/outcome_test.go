package upstream

import (
	"context"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody/gate"
)

// TestCallOutcome: a call whose server crashed after the request went out
// may have run (gate.ErrOutcomeUnknown); one the server answered with an
// error, or one the caller cancelled, did not lose its answer.
func TestCallOutcome(t *testing.T) {
	c := dial(t, stdioServer("o", nil), ConnOptions{})
	_, err := c.Call(context.Background(), "no_such_tool", []byte(`{}`), nil)
	if err == nil || errors.Is(err, gate.ErrOutcomeUnknown) {
		t.Errorf("an unknown tool, answered by the server: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go cancel() // block answers only once cancelled, whenever that is
	_, err = c.Call(ctx, "block", []byte(`{}`), nil)
	if !errors.Is(err, context.Canceled) || errors.Is(err, gate.ErrOutcomeUnknown) {
		t.Errorf("a cancelled call: %v", err)
	}
	_, err = c.Call(context.Background(), "crash", []byte(`{}`), nil)
	if !errors.Is(err, gate.ErrOutcomeUnknown) {
		t.Errorf("a call its server crashed under: %v, want ErrOutcomeUnknown", err)
	}
}

// TestCallCarriesMeta: the request's _meta reaches the server's tool as
// the client sent it (custody's own keys were taken out at the door), but
// for its progress token: custody gives the server one of its own when a
// client on its MCP door asked for progress (client.go), and none to a
// call from nowhere to relay progress to.
func TestCallCarriesMeta(t *testing.T) {
	got := make(chan mcp.Meta, 1)
	u := newHTTPUpstream(t, func() *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "meta", Version: "1"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "meta", Description: "Report the request's _meta."},
			func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				got <- req.Params.Meta
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
			})
		return s
	})
	c := dial(t, Server{Name: "m", URL: u.URL()}, ConnOptions{})
	meta := map[string]any{"vendor/request": "r-1", "progressToken": "p-7"}
	if _, err := c.Call(context.Background(), "meta", []byte(`{}`), meta); err != nil {
		t.Fatal(err)
	}
	if m := <-got; m["vendor/request"] != "r-1" || m["progressToken"] != nil {
		t.Errorf("the tool saw _meta %v, want vendor/request only", m)
	}
}
