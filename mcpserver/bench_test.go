package mcpserver_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/custody-dev/custody/mcpserver"
	"github.com/custody-dev/custody/web"
)

// benchWorkers is how many sessions (MCP) and keep-alive connections
// (/v1) drive the two doors at once.
const benchWorkers = 16

// BenchmarkDoors compares MCP tools/call with POST /v1/calls: the same
// READ tool on the same gateway and SQLite ledger, served by one server on
// loopback TCP as custody serve mounts it, driven by the same load
// generator with 16 workers. A third side makes the same MCP calls
// without the Mcp-Protocol-Version header, which the door leaves to the
// SDK's own handling: the baseline the door's tools/call path improves
// on. The sides take turns in rounds so that all meet the same machine.
// It reports each side's calls/s and CPU per call (server and load
// generator) and mcp/v1, the ratio the MCP door must keep at 0.7 or
// above:
//
//	go test ./mcpserver/ -run '^$' -bench Doors -benchtime 16000x
func BenchmarkDoors(b *testing.B) {
	d := newDoors(b)
	const rounds = 4
	sides := []struct {
		name string
		call func(int) error
	}{{"mcp", d.mcpCall}, {"v1", d.v1Call}, {"mcp_sdk", d.mcpSDKCall}}
	var took, cpu [3]time.Duration
	per := max(b.N/rounds, benchWorkers)
	b.ResetTimer()
	for range rounds {
		for i, side := range sides {
			// Each side starts on a collected heap: none pays for the
			// garbage of the one before.
			runtime.GC()
			start, cpu0 := time.Now(), processCPU()
			if err := drive(per, side.call); err != nil {
				b.Fatal(err)
			}
			took[i] += time.Since(start)
			cpu[i] += processCPU() - cpu0
		}
	}
	b.StopTimer()
	calls := float64(per * rounds)
	for i, side := range sides {
		b.ReportMetric(calls/took[i].Seconds(), side.name+"_calls/s")
		if cpu[i] > 0 {
			b.ReportMetric(float64(cpu[i].Microseconds())/calls, side.name+"_cpu_us/call")
		}
	}
	b.ReportMetric(took[1].Seconds()/took[0].Seconds(), "mcp/v1")
	b.ReportMetric(took[1].Seconds()/took[2].Seconds(), "mcp_sdk/v1")
}

// drive makes n calls with benchWorkers workers; worker w calls door(w).
func drive(n int, door func(worker int) error) error {
	var left atomic.Int64
	left.Store(int64(n))
	var wg sync.WaitGroup
	errs := make(chan error, benchWorkers)
	for w := range benchWorkers {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if err := door(w); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// doors is one server with both doors and a client for each worker.
type doors struct {
	url      string
	client   *http.Client
	sessions [benchWorkers]string
	ids      [benchWorkers]int
}

const v1Body = `{"tool":"get_time","arguments":{}}`

func newDoors(b *testing.B) *doors {
	st := newStack(b, b.TempDir())
	tokens := web.Tokens{}
	if err := tokens.Add(web.RoleAgent, "agent-7:"+agentToken); err != nil {
		b.Fatal(err)
	}
	ws, err := web.New(web.Config{Gateway: st.gw, Approvals: st.approvals, Ledger: st.db, Sessions: st.db, Tokens: tokens,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcpHandler(b, st))
	mux.Handle("/", ws.Handler())
	hs := httptest.NewServer(mux)
	b.Cleanup(hs.Close)
	tr := &http.Transport{MaxIdleConnsPerHost: 2 * benchWorkers}
	b.Cleanup(tr.CloseIdleConnections)
	d := &doors{url: hs.URL, client: &http.Client{Transport: tr}}
	for w := range benchWorkers {
		if d.sessions[w], err = d.initialize(); err != nil {
			b.Fatal(err)
		}
	}
	return d
}

// post sends body to path, with an MCP session and protocol version
// when not empty, and returns the status, the response headers and body.
func (d *doors) post(path, session, version, body string) (int, http.Header, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, d.url+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+agentToken)
	req.Header.Set("Content-Type", "application/json")
	if path == "/mcp" {
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		if version != "" {
			req.Header.Set("Mcp-Protocol-Version", version)
		}
	}
	res, err := d.client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, out, err
}

// initialize opens an MCP session as a client does: initialize, then
// notifications/initialized.
func (d *doors) initialize() (string, error) {
	status, h, body, err := d.post("/mcp", "", "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	if err != nil || status != http.StatusOK {
		return "", fmt.Errorf("initialize: %d %s %v", status, body, err)
	}
	id := h.Get("Mcp-Session-Id")
	status, _, body, err = d.post("/mcp", id, "2025-06-18", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if err != nil || status != http.StatusAccepted {
		return "", fmt.Errorf("initialized: %d %s %v", status, body, err)
	}
	return id, nil
}

// mcpCall makes one tools/call on worker w's session.
func (d *doors) mcpCall(w int) error { return d.toolsCall(w, "2025-06-18") }

// mcpSDKCall makes one tools/call that the door leaves to the SDK.
func (d *doors) mcpSDKCall(w int) error { return d.toolsCall(w, "") }

// toolsCall makes one tools/call on worker w's session, with the
// Mcp-Protocol-Version header set to version unless it is empty.
func (d *doors) toolsCall(w int, version string) error {
	d.ids[w]++
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_time","arguments":{}}}`, d.ids[w])
	status, _, out, err := d.post("/mcp", d.sessions[w], version, body)
	if err != nil || status != http.StatusOK || !bytes.Contains(out, []byte(`"result"`)) || bytes.Contains(out, []byte(`"isError":true`)) {
		return fmt.Errorf("mcp call: %d %s %v", status, out, err)
	}
	return nil
}

// v1Call makes one POST /v1/calls.
func (d *doors) v1Call(int) error {
	status, _, out, err := d.post("/v1/calls", "", "", v1Body)
	if err != nil || status != http.StatusOK {
		return fmt.Errorf("v1 call: %d %s %v", status, out, err)
	}
	return nil
}

// mcpHandler is the MCP door as serve mounts it, for agentToken.
func mcpHandler(b *testing.B, st *stack) http.Handler {
	srv, err := mcpserver.New(st.gw, st.reg, mcpserver.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return srv.HTTPHandler(authAs("agent-7"))
}
