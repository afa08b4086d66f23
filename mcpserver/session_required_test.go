package mcpserver_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/custody-dev/custody/mcpserver"
)

// TestRequestWithoutSession: on a stateful protocol version a request
// other than initialize without an Mcp-Session-Id is a 400, as the
// streamable HTTP transport says; initialize, notifications and a request
// that carries a stateless version in its _meta are not refused for it.
func TestRequestWithoutSession(t *testing.T) {
	e := newDoorEnv(t, mcpserver.Options{})
	for name, c := range map[string]struct {
		body    string
		refused bool
	}{
		"ErrToolsList": {`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, true},
		"ErrToolsCall": {getTime, true},
		"ErrOldMeta":   {`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18"}}}`, true},
		"Initialize":   {initializeBody, false},
		"Notification": {`{"jsonrpc":"2.0","method":"notifications/initialized"}`, false},
		"Stateless":    {`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, false},
	} {
		t.Run(name, func(t *testing.T) {
			res, body := e.rawPost(t, "", c.body)
			refused := res.StatusCode == http.StatusBadRequest && strings.Contains(string(body), "Mcp-Session-Id")
			if refused != c.refused {
				t.Errorf("status %d %s; refused for want of a session: %v, want %v", res.StatusCode, body, refused, c.refused)
			}
		})
	}
}
