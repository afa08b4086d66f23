package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody/mcpserver"
	"github.com/custody-dev/custody/tlog"
)

func TestProofMeta(t *testing.T) {
	st := newStack(t, t.TempDir())
	var covered atomic.Bool // whether the test's Inclusion first signs a checkpoint
	srv, err := mcpserver.New(st.gw, st.reg, mcpserver.Options{
		Inclusion: func(ctx context.Context, seq uint64) (tlog.Receipt, error) {
			if covered.Load() {
				if _, err := st.db.Checkpoint(ctx); err != nil {
					return tlog.Receipt{}, err
				}
			}
			return st.db.Receipt(ctx, seq, 0)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.HTTPHandler(authAs("agent-7")))
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	cs, err := connectHTTP(t, hs.URL, agentToken)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	callWith := func(meta mcp.Meta) mcp.Meta {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "get_time", Arguments: json.RawMessage(`{"zone":"UTC"}`), Meta: meta})
		if err != nil || res.IsError {
			t.Fatalf("call: %v %s", err, text(res))
		}
		return res.Meta
	}
	if m := callWith(nil); m[mcpserver.InclusionMeta] != nil || m[mcpserver.InclusionPendingMeta] != nil {
		t.Fatalf("a call that did not ask got %v", m)
	}
	if m := callWith(mcp.Meta{mcpserver.ProofMeta: true}); m[mcpserver.InclusionPendingMeta] == nil {
		t.Fatalf("a call no checkpoint covers: %v", m)
	}
	covered.Store(true)
	m := callWith(mcp.Meta{mcpserver.ProofMeta: true})
	raw, _ := json.Marshal(m[mcpserver.InclusionMeta])
	var rec tlog.Receipt
	if err := json.Unmarshal(raw, &rec); err != nil || rec.Seq == 0 {
		t.Fatalf("inclusion %s: %v", raw, err)
	}
	if _, err := rec.Verify(st.db.PublicKey(), st.db.Origin()); err != nil {
		t.Fatal(err)
	}
	var receipt struct{ Seq uint64 }
	raw, _ = json.Marshal(m["custody/receipt"])
	if json.Unmarshal(raw, &receipt); receipt.Seq != rec.Seq {
		t.Fatalf("inclusion of entry %d for a call whose receipt is %d", rec.Seq, receipt.Seq)
	}
}
