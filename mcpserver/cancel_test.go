package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/example"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/internal/gatetest"
	"github.com/custody-dev/custody/mcpserver"
	"github.com/custody-dev/custody/store/sqlite"
)

// TestCancelledCall: a client's notifications/cancelled ends a tools/call
// the door runs: the tool's context ends, no response follows, and the
// call ends on the ledger as cancelled (a READ) or of unknown outcome (a
// WRITE, which may have taken effect).
func TestCancelledCall(t *testing.T) {
	db, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	name, raw := example.Contract()
	reg, err := contract.Load(contract.Options{Extra: map[string][]byte{name: raw, gatetest.ContractFile: []byte(gatetest.Contract)}})
	if err != nil {
		t.Fatal(err)
	}
	approvals, err := approval.New(approval.Config{Store: db, Ledger: db})
	if err != nil {
		t.Fatal(err)
	}
	running := make(chan string, 2)
	waits := func(ctx context.Context, c custody.Call) (json.RawMessage, error) {
		running <- c.Tool
		<-ctx.Done()
		return nil, ctx.Err()
	}
	spec := func(name string, access custody.Access) custody.ToolSpec {
		return custody.ToolSpec{Name: name, Description: "waits until cancelled",
			Input: "https://custody.dev/schemas/gatetest/v1#/$defs/in", Output: "https://custody.dev/schemas/gatetest/v1#/$defs/out",
			Access: access, Effect: custody.EffectReversible, Approval: custody.NotRequired}
	}
	gw, err := gate.New(gate.Config{Registry: reg, Ledger: db, Approvals: approvals, State: db, Logger: slog.New(slog.DiscardHandler)},
		example.EnvelopeID, []gate.Tool{{Spec: spec("wait_read", custody.Read), Handler: waits}, {Spec: spec("wait_write", custody.Write), Handler: waits}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcpserver.New(gw, reg, mcpserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.HTTPHandler(authAs("agent-7")))
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	e := &doorEnv{srv: srv, url: hs.URL}
	session := e.initialize(t)

	for i, c := range []struct{ tool, kind string }{
		{"wait_read", custody.KindCallCancelled},
		{"wait_write", custody.KindCallOutcomeUnknown},
	} {
		t.Run(c.tool, func(t *testing.T) {
			type answer struct {
				status int
				body   []byte
				err    error
			}
			answered := make(chan answer, 1)
			id := 40 + i
			go func() {
				res, body, err := e.send(session, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"n":1}}}`, id, c.tool))
				if err != nil {
					answered <- answer{err: err}
					return
				}
				answered <- answer{status: res.StatusCode, body: body}
			}()
			<-running // the tool runs, and waits for its context
			res, body := e.rawPost(t, session, fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":"user pressed stop"}}`, id))
			if res.StatusCode != http.StatusAccepted {
				t.Fatalf("the cancellation: %d %s", res.StatusCode, body)
			}
			a := <-answered
			if a.err != nil || a.status != http.StatusNoContent || len(a.body) != 0 {
				t.Fatalf("the cancelled call answered %d %q, %v; want no response", a.status, a.body, a.err)
			}
			es, err := db.Entries(context.Background(), custody.Query{Kind: c.kind})
			if err != nil || len(es) != 1 || es[0].Actor != "agent-7" {
				t.Fatalf("%s entries %+v, %v; want one of agent-7", c.kind, es, err)
			}
		})
	}
	// A cancellation naming no running call changes nothing; the session
	// goes on.
	if res, _ := e.rawPost(t, session, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`); res.StatusCode != http.StatusAccepted {
		t.Errorf("a stray cancellation: %d", res.StatusCode)
	}
	if got := e.ping(t, session); got != http.StatusOK {
		t.Errorf("ping after the cancellations: %d", got)
	}
}
