package mcpserver_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody/example"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/mcpserver"
)

// TestUpdateKeepsSessions: a server updated with a gateway of fewer
// tools serves them to the session opened before, which is told the
// list changed, and refuses the tool that went as unknown; the session
// stays one trace.
func TestUpdateKeepsSessions(t *testing.T) {
	st := newStack(t, t.TempDir())
	srv, err := mcpserver.New(st.gw, st.reg, mcpserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.HTTPHandler(authAs("agent-7")))
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)

	changed := make(chan struct{}, 8)
	client := mcp.NewClient(&mcp.Implementation{Name: "custody-test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{agentToken, http.DefaultTransport}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	before := call(t, cs, "get_time", []byte(`{}`))

	var fewer []gate.Tool
	for _, tool := range example.Tools(st.db, nil) {
		if tool.Spec.Name != "post_announcement" {
			fewer = append(fewer, tool)
		}
	}
	gw, err := gate.New(gate.Config{Registry: st.reg, Ledger: st.db, Approvals: st.approvals, State: st.db,
		Logger: slog.New(slog.DiscardHandler)}, example.EnvelopeID, fewer)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := srv.Update(gw, st.reg, nil); !ok || err != nil {
		t.Fatalf("Update: %v %v", ok, err)
	}
	select {
	case <-changed:
	case <-time.After(60 * time.Second):
		t.Fatal("the session was not told the tool list changed")
	}
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name == "post_announcement" {
			t.Fatal("the tool that went is still listed")
		}
	}
	after := call(t, cs, "get_time", []byte(`{}`))
	if before.Meta["custody/trace_id"] != after.Meta["custody/trace_id"] {
		t.Errorf("traces %v and %v: the session is one trace", before.Meta["custody/trace_id"], after.Meta["custody/trace_id"])
	}
	gone := call(t, cs, "post_announcement", []byte(`{"channel":"ops","message":"hi"}`))
	if !gone.IsError {
		t.Fatalf("the tool that went was served: %+v", gone)
	}
}

// TestUpdateKeepsCapabilities: an update that would take the relay away
// changes nothing and says a new server is needed; one with a relay like
// the first serves on.
func TestUpdateKeepsCapabilities(t *testing.T) {
	e := newTalkEnv(t)
	if ok, err := e.srv.Update(e.gw, e.reg, nil); ok || err != nil {
		t.Fatalf("an update without the relay: %v %v", ok, err)
	}
	if ok, err := e.srv.Update(e.gw, e.reg, e.relay); !ok || err != nil {
		t.Fatalf("an update with the same relay: %v %v", ok, err)
	}
	res, err := e.client.CallTool(t.Context(), &mcp.CallToolParams{Name: "work__big", Arguments: map[string]any{"n": 2}})
	if err != nil || res.IsError {
		t.Fatalf("a call after the updates: %v %+v", err, res)
	}
}
