package mcpserver_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestEveryProtocolVersion: a client of each protocol revision from
// 2024-11-05 initialises on the HTTP door, lists and calls an upstream
// tool, in one session that is one trace.
func TestEveryProtocolVersion(t *testing.T) {
	e := newTalkEnv(t)
	traces := map[string][]string{}
	for _, v := range []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"} {
		t.Run(v, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
			hc := &http.Client{Transport: bearer{token: agentToken, next: http.DefaultTransport}}
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.url, HTTPClient: hc, MaxRetries: -1},
				&mcp.ClientSessionOptions{ProtocolVersion: v})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			// The SDK serves 2026-07-28 only without sessions, and a
			// session is custody's chain of custody: such a client is
			// answered in 2025-11-25, which it speaks too.
			want := v
			if v == "2026-07-28" {
				want = "2025-11-25"
			}
			if got := cs.InitializeResult().ProtocolVersion; got != want {
				t.Errorf("negotiated %s, want %s", got, want)
			}
			tools, err := cs.ListTools(ctx, nil)
			if err != nil || len(tools.Tools) == 0 {
				t.Fatalf("tools/list: %v", err)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "work__big", Arguments: map[string]any{"n": 3}})
			if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "xxx" {
				t.Fatalf("tools/call: %+v %v", res, err)
			}
			traces[v] = append(traces[v], res.Meta["custody/trace_id"].(string))
			again, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "work__big", Arguments: map[string]any{"n": 1}})
			if err != nil {
				t.Fatal(err)
			}
			traces[v] = append(traces[v], again.Meta["custody/trace_id"].(string))
		})
	}
	// A session is one trace.
	for v, ts := range traces {
		if ts[0] != ts[1] {
			t.Errorf("%s: traces %v", v, ts)
		}
	}
}
