package brain

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sdkClient connects a plain go-sdk client through t.
func sdkClient(t *testing.T, tr mcp.Transport) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "0"}, nil)
	cs, err := c.Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func httpBrain(t *testing.T) string {
	srv := NewServer(ServerOptions{Contracts: registry(t)})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts.URL
}

// TestBrainServerWithSDKClient drives the Brain over stdio (a spawned
// process) and over streamable HTTP with the official client.
func TestBrainServerWithSDKClient(t *testing.T) {
	transports := []struct {
		name string
		open func(t *testing.T) mcp.Transport
	}{
		{"Stdio", func(t *testing.T) mcp.Transport { tr, _ := stdioBrain(t)(); return tr }},
		{"StreamableHTTP", func(t *testing.T) mcp.Transport {
			return &mcp.StreamableClientTransport{Endpoint: httpBrain(t), MaxRetries: -1}
		}},
	}
	room := exampleRoom(t)
	reg := registry(t)
	good := marshal(t, build(t, room, BuildOptions{Job: "rank_assumptions", Focus: "claim-core"}))
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			cs := sdkClient(t, tr.open(t))
			tools, err := cs.ListTools(context.Background(), nil)
			if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != toolName {
				t.Fatalf("tools = %+v, %v", tools, err)
			}
			calls := []struct {
				name    string
				args    any
				isError bool
			}{
				{"OK", map[string]json.RawMessage{"packet": good}, false},
				{"ErrExtraArgument", map[string]any{"packet": json.RawMessage(good), "transcript": "x"}, true},
				{"ErrNoPacket", map[string]any{}, true},
				{"ErrInvalidPacket", map[string]json.RawMessage{"packet": mutate(t, good, func(p map[string]any) { p["body"] = "x" })}, true},
				{"ErrUnknownJob", map[string]json.RawMessage{"packet": mutate(t, good, func(p map[string]any) { p["job"] = "x" })}, true},
			}
			for _, c := range calls {
				t.Run(c.name, func(t *testing.T) {
					res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: toolName, Arguments: c.args})
					if err != nil {
						t.Fatalf("call: %v", err)
					}
					if res.IsError != c.isError {
						t.Fatalf("IsError = %v, want %v: %+v", res.IsError, c.isError, res.Content)
					}
					text := res.Content[0].(*mcp.TextContent).Text
					if c.isError {
						if !strings.Contains(text, `"error":"invalid"`) {
							t.Errorf("error result %s", text)
						}
						return
					}
					if err := reg.Validate(outRef("rank_assumptions"), []byte(text)); err != nil {
						t.Errorf("reply does not validate: %v", err)
					}
				})
			}
		})
	}
}

func TestSendOverStreamableHTTP(t *testing.T) {
	f := newWireFixture(t)
	url := httpBrain(t)
	f.wire.Brain = func() (mcp.Transport, error) {
		return &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil
	}
	a, err := f.wire.Send(context.Background(), f.packet(t, "opportunity_rank"))
	if err != nil || !a.Answered() || len(a.Response.Suggestions) != 3 {
		t.Fatalf("Send = %+v, %v", a, err)
	}
}

// badAnswerer replies with something the out schema refuses.
type badAnswerer struct{}

func (badAnswerer) Answer(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(`{"suggestions":[{"summary":"x","raw_notes":"leak"}]}`), nil
}

func TestBrainServerWithholdsAnInvalidReply(t *testing.T) {
	f := newWireFixture(t)
	f.wire.Brain = memoryBrain(t, NewServer(ServerOptions{Contracts: registry(t), Answerer: badAnswerer{}}))
	a, err := f.wire.Send(context.Background(), f.packet(t, "suggest_next_move"))
	if err != nil || a.Reason != ReasonBrainError || strings.Contains(a.Detail, "leak") {
		t.Fatalf("Send = %+v, %v", a, err)
	}
}
