package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRawPassThroughMatchesSDK calls an upstream's tools over /mcp on the
// door's own path (a plain call, answered with the server's bytes) and
// on the SDK's (a call asking for progress): the results are the same as
// the SDK reads them, receipts aside, and neither carries the server's
// forged custody/ keys.
func TestRawPassThroughMatchesSDK(t *testing.T) {
	dir := t.TempDir()
	base, _, stop := startServe(t, upstreamEnv(), "--data", filepath.Join(dir, "data"), "--config", testServerConfig(t, dir, "", ""))
	defer stop()
	cs := mcpSession(t, base, upAgent)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range []struct{ tool, args string }{
		{"t__echo", `{"message":"<b>hi</b> & ü"}`},
		{"t__spoof", `{}`},
		{"t__fail", `{}`},
	} {
		var got [2]string
		for i, meta := range []mcp.Meta{nil, {"progressToken": "p-" + tc.tool}} {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: json.RawMessage(tc.args), Meta: meta})
			if err != nil {
				t.Fatalf("%s: %v", tc.tool, err)
			}
			if res.Meta["custody/receipt"] == nil || res.Meta["custody/inclusion"] != nil {
				t.Errorf("%s: _meta %v: custody's receipt, and no key of the server's under custody/", tc.tool, res.Meta)
			}
			delete(res.Meta, "custody/receipt")
			b, _ := json.Marshal(res)
			got[i] = string(b)
		}
		if got[0] != got[1] {
			t.Errorf("%s:\ndoor %s\nSDK  %s", tc.tool, got[0], got[1])
		}
	}
}
