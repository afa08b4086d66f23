package mcpserver_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
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
// generator with 16 workers. The two doors take turns in rounds so that
// both meet the same machine. It reports each door's calls/s and
// mcp/v1, the ratio the MCP door must keep at 0.7 or above:
//
//	go test ./mcpserver/ -run '^$' -bench Doors -benchtime 20000x
func BenchmarkDoors(b *testing.B) {
	d := newDoors(b)
	const rounds = 4
	var took, cpu [2]time.Duration
	per := max(b.N/rounds, benchWorkers)
	b.ResetTimer()
	for range rounds {
		for i, door := range []func(int) error{d.mcpCall, d.v1Call} {
			start, cpu0 := time.Now(), processCPU()
			if err := drive(per, door); err != nil {
				b.Fatal(err)
			}
			took[i] += time.Since(start)
			cpu[i] += processCPU() - cpu0
		}
	}
	b.StopTimer()
	calls := float64(per * rounds)
	mcpRate, v1Rate := calls/took[0].Seconds(), calls/took[1].Seconds()
	b.ReportMetric(mcpRate, "mcp_calls/s")
	b.ReportMetric(v1Rate, "v1_calls/s")
	b.ReportMetric(mcpRate/v1Rate, "mcp/v1")
	if cpu[0] > 0 {
		// CPU per call of the whole process, server and load generator:
		// what the rates are worth on a machine shared with other work.
		b.ReportMetric(float64(cpu[0].Microseconds())/calls, "mcp_cpu_us/call")
		b.ReportMetric(float64(cpu[1].Microseconds())/calls, "v1_cpu_us/call")
	}
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
	ws, err := web.New(web.Config{Gateway: st.gw, Approvals: st.approvals, Ledger: st.db, Tokens: tokens,
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

// post sends body to path and returns the status, the response headers
// and body.
func (d *doors) post(path, session, body string) (int, http.Header, []byte, error) {
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
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
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
	status, h, body, err := d.post("/mcp", "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	if err != nil || status != http.StatusOK {
		return "", fmt.Errorf("initialize: %d %s %v", status, body, err)
	}
	id := h.Get("Mcp-Session-Id")
	status, _, body, err = d.post("/mcp", id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if err != nil || status != http.StatusAccepted {
		return "", fmt.Errorf("initialized: %d %s %v", status, body, err)
	}
	return id, nil
}

// mcpCall makes one tools/call on worker w's session.
func (d *doors) mcpCall(w int) error {
	d.ids[w]++
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_time","arguments":{}}}`, d.ids[w])
	status, _, out, err := d.post("/mcp", d.sessions[w], body)
	if err != nil || status != http.StatusOK || !bytes.Contains(out, []byte(`"result"`)) || bytes.Contains(out, []byte(`"isError":true`)) {
		return fmt.Errorf("mcp call: %d %s %v", status, out, err)
	}
	return nil
}

// v1Call makes one POST /v1/calls.
func (d *doors) v1Call(int) error {
	status, _, out, err := d.post("/v1/calls", "", v1Body)
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
