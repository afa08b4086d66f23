package mcpserver_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/mcpserver"
)

// TestFastPathMatchesSDK makes the same tools/call on one session twice:
// answered at the door, and by the SDK (a request without the protocol
// version header is left to it). The responses must be the same but for
// each call's own receipt.
func TestFastPathMatchesSDK(t *testing.T) {
	e := newDoorEnv(t, mcpserver.Options{})
	id := e.initialize(t)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"write_note","arguments":{"title":"t","text":"<x> & y","extra":1}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"rm_<rf>&","arguments":{"path":"/"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_time","arguments":{"zone":"Mars/Olympus"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"write_note","arguments":null}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"write_note"}}`,
	} {
		before := len(entries(t, e.st.db, custody.Query{}))
		fastRes, fast := e.rawPost(t, id, body)
		sdkRes, sdk := e.rawPost(t, id, body, "Mcp-Protocol-Version", "")
		if n := len(entries(t, e.st.db, custody.Query{})) - before; n != 2 {
			t.Fatalf("%s: %d ledger entries, want one per call", body, n)
		}
		// The door answers as JSON, the SDK as an event stream (on which
		// an upstream's progress may go first): both are the spec's.
		if fastRes.StatusCode != sdkRes.StatusCode || fastRes.Header.Get("Content-Type") != "application/json" ||
			sdkRes.Header.Get("Content-Type") != "text/event-stream" {
			t.Errorf("%s: door %d %q, SDK %d %q", body, fastRes.StatusCode, fastRes.Header.Get("Content-Type"),
				sdkRes.StatusCode, sdkRes.Header.Get("Content-Type"))
		}
		if a, b := withoutReceipts(t, fast), withoutReceipts(t, sdk); a != b {
			t.Errorf("%s:\ndoor %s\nSDK  %s", body, a, b)
		}
	}
}

// receipts matches every receipt member of a response: each call's own.
var receipts = regexp.MustCompile(`"(custody/)?receipt":\{[^{}]*\},?`)

// withoutReceipts returns a response's bytes with its receipts removed.
func withoutReceipts(t *testing.T, body []byte) string {
	t.Helper()
	if !json.Valid(body) {
		t.Fatalf("response %s is not JSON", body)
	}
	return receipts.ReplaceAllString(string(body), "")
}

// TestFastPathLeavesToSDK checks requests the door must not answer
// itself: another agent's session and a rebound Host are refused by the
// SDK and run nothing; a _meta key the door does not know is served by
// the SDK.
func TestFastPathLeavesToSDK(t *testing.T) {
	st := newStack(t, t.TempDir())
	srv, err := mcpserver.New(st.gw, st.reg, mcpserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const otherToken = "other-agent-token-0123456789"
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.HTTPHandler(func(token string) (string, error) {
		if token == otherToken {
			return "agent-8", nil
		}
		return authAs("agent-7")(token)
	}))
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	e := &doorEnv{st: st, srv: srv, url: hs.URL}
	id := e.initialize(t)

	res, body := e.rawPost(t, id, getTime, "Authorization", "Bearer "+otherToken)
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("another agent's session: %d %s, want 403", res.StatusCode, body)
	}
	if es := entries(t, st.db, custody.Query{}); len(es) != 0 {
		t.Fatalf("a call on another agent's session ran: %+v", es[0])
	}

	// The SDK refuses a loopback request naming another host (DNS
	// rebinding); the door must not answer it first.
	res, body = e.rawPost(t, id, getTime, "Host", "rebound.example")
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("a loopback request for another host: %d %s, want 403", res.StatusCode, body)
	}
	if es := entries(t, st.db, custody.Query{}); len(es) != 0 {
		t.Fatalf("a call through a rebound host ran: %+v", es[0])
	}

	// The SDK requires both media types in Accept; so does the door.
	if res, body = e.rawPost(t, id, getTime, "Accept", "application/json"); res.StatusCode != http.StatusBadRequest {
		t.Errorf("Accept without text/event-stream: %d %s, want the SDK's 400", res.StatusCode, body)
	}

	withMeta := `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get_time","arguments":{},"_meta":{"example.com/tag":"x"}}}`
	res, body = e.rawPost(t, id, withMeta)
	if res.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"result"`)) || bytes.Contains(body, []byte(`"isError":true`)) {
		t.Errorf("unknown _meta key: %d %s", res.StatusCode, body)
	}
}
