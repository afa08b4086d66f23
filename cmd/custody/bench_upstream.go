package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/config"
	"github.com/custody-dev/custody/internal/bench"
	"github.com/custody-dev/custody/internal/mcptest"
)

// upstreamBenchResult is the last line `custody bench upstream` prints:
// the rates with 16 callers, the added p50 with one.
type upstreamBenchResult struct {
	Door         string  `json:"door"`
	Callers      int     `json:"callers"`
	DirectPerS   float64 `json:"direct_calls_per_s"`
	GovernedPerS float64 `json:"governed_calls_per_s"`
	Ratio        float64 `json:"ratio"`
	AddedP50us   int64   `json:"added_p50_us"`
	// CPUPerCallUS is the served gateway's own process CPU over the
	// governed calls made, in µs; absent behind no door, or where the
	// system does not say.
	CPUPerCallUS float64 `json:"cpu_per_call_us,omitempty"`
	// AllocPerCallBytes is what the served gateway allocated over the
	// governed calls made, per call; absent behind no door.
	AllocPerCallBytes int64 `json:"alloc_per_call_bytes,omitempty"`
}

// upstreamBench is what one `bench upstream` run drives.
type upstreamBench struct {
	command   string
	args      []string
	tool      string
	arguments json.RawMessage
	load      bench.Load
	rounds    int
	// door is how the governed side reaches the gateway: doorMCP,
	// doorV1 or doorNone.
	door string
	// cpuprofile, when set, is where the served gateway writes its CPU
	// profile.
	cpuprofile string
	// maxCalls, when positive, is the tool's maxCallsPerTrace: the
	// budget whose counters each call reads and commits.
	maxCalls int
}

// config is the serve config of the governed side: b's server as
// upstream "b", its tool READ.
func (b upstreamBench) config() map[string]any {
	policy := map[string]any{"access": "READ", "effect": "NONE"}
	if b.maxCalls > 0 {
		policy["maxCallsPerTrace"] = b.maxCalls
	}
	return map[string]any{
		"mcpServers": map[string]any{"b": map[string]any{"command": b.command, "args": b.args}},
		"tools":      map[string]any{"b__" + b.tool: policy},
	}
}

// runBenchUpstream measures the cost of governing an upstream MCP tool:
//
//	custody bench upstream [--door mcp|v1|none] [--command CMD --arg A ... --tool NAME --arguments JSON] [--seconds S | --calls N] [--rounds N]
//
// One READ tool of a stdio MCP server is driven directly (an MCP client
// session with the server) and through custody (the same server behind a
// gateway on a temporary data directory, each call validated, recorded
// and made durable), the two taking turns: with 16 callers for the
// rates, then one caller for the latency each adds. The governed side
// goes through a real front door by default: a `custody serve` process
// on a loopback port, called over /mcp by one go-sdk session per caller
// (--door mcp) or with POST /v1/calls (--door v1); --door none calls the
// gateway in process, behind no door. By default the server
// is custody's own small Go server (its echo tool); --command runs any
// other, such as the official filesystem server. With --calls N each side
// makes exactly N calls at each load, split over its rounds, instead of
// running for --seconds. The last line is one JSON object.
func (m *Main) runBenchUpstream(ctx context.Context, args []string) int {
	fs := m.flags("bench upstream", "[--door mcp|v1|none] [--command CMD [--arg A]... --tool NAME --arguments JSON] [--seconds S | --calls N] [--rounds N]")
	b := upstreamBench{}
	var cmdArgs stringList
	fs.StringVar(&b.cpuprofile, "cpuprofile", "", "write a CPU profile of the served gateway to `FILE` (doors mcp and v1)")
	fs.StringVar(&b.door, "door", doorMCP, "the governed side's `DOOR`: mcp (a serve process's /mcp), v1 (its POST /v1/calls), none (the gateway in process) or sdk (no custody: the server behind the go-sdk's own HTTP handler, the floor of /mcp)")
	fs.StringVar(&b.command, "command", "", "the stdio MCP server's `COMMAND` (default: custody's own small Go server)")
	fs.Var(&cmdArgs, "arg", "an `ARGUMENT` of --command (repeat for more)")
	fs.StringVar(&b.tool, "tool", "echo", "the READ tool to call")
	arguments := fs.String("arguments", `{"message":"bench"}`, "the tool's arguments, as `JSON`")
	seconds := fs.Float64("seconds", 6, "measure each side for `S` seconds in all, per load")
	fs.Int64Var(&b.load.Calls, "calls", 0, "make exactly `N` calls on each side in all, per load, split over its rounds, instead of running for --seconds")
	fs.IntVar(&b.maxCalls, "max-calls-per-trace", 0, "give the tool a maxCallsPerTrace budget of `N` calls (0: none), as the README's example does")
	fs.IntVar(&b.rounds, "rounds", 3, "split each side's time, or its calls, into `N` turns, alternating with the other side's")
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if b.door != doorMCP && b.door != doorV1 && b.door != doorNone && b.door != doorSDK {
		return m.flagUsage(fs, "--door must be mcp, v1, none or sdk")
	}
	if b.door == doorSDK && b.command != "" {
		return m.flagUsage(fs, "--door sdk serves custody's own server: it takes no --command")
	}
	if *seconds <= 0 || b.rounds < 1 || !json.Valid([]byte(*arguments)) {
		return m.flagUsage(fs, "--seconds and --rounds must be positive and --arguments JSON")
	}
	if b.maxCalls < 0 {
		return m.flagUsage(fs, "--max-calls-per-trace must not be negative")
	}
	if b.load.Calls < 0 || b.load.Calls > 0 && b.load.Calls < int64(b.rounds) {
		return m.flagUsage(fs, "--calls, when set, must be at least --rounds: every round makes a call")
	}
	b.args, b.arguments = append([]string{}, cmdArgs...), json.RawMessage(*arguments)
	if b.command == "" {
		self, err := os.Executable()
		if err != nil {
			return m.fail(fmt.Errorf("bench: find custody's own executable: %w", err))
		}
		b.command, b.args = self, []string{"bench", "upstream-server"}
	}
	b.load.Callers, b.load.Duration = 16, time.Duration(*seconds*float64(time.Second)/float64(b.rounds))
	res, err := m.benchUpstream(ctx, b)
	if err != nil {
		return m.fail(err)
	}
	return m.printJSON(res)
}

// benchUpstream runs both sides at 16 callers, then at one.
func (m *Main) benchUpstream(ctx context.Context, b upstreamBench) (upstreamBenchResult, error) {
	dir, err := os.MkdirTemp("", "custody-bench-upstream-")
	if err != nil {
		return upstreamBenchResult{}, fmt.Errorf("bench: temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	direct, err := mcp.NewClient(&mcp.Implementation{Name: "custody-bench", Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: exec.Command(b.command, b.args...)}, nil)
	if err != nil {
		return upstreamBenchResult{}, fmt.Errorf("bench: start the server: %w", err)
	}
	defer direct.Close()
	gov, err := m.governedDoor(ctx, dir, b)
	if err != nil {
		return upstreamBenchResult{}, err
	}
	defer gov.close()
	res := upstreamBenchResult{Door: b.door, Callers: 16}
	fmt.Fprintf(m.Stdout, "%s %s, tool %s, governed through door %s\n", b.command, strings.Join(b.args, " "), b.tool, b.door)
	cpu0, cpuKnown := gov.cpu()
	alloc0, allocKnown := gov.allocated()
	var governedCalls int64
	for _, callers := range []int{16, 1} {
		load := b.load
		load.Callers = callers
		ds, gs := directSide(direct, b), gov.side(callers)
		if err := m.benchRounds(ctx, load, b.rounds, ds, gs); err != nil {
			return res, err
		}
		governedCalls += int64(gs.Count())
		dRate, dP50, dP99 := ds.Summary()
		gRate, gP50, gP99 := gs.Summary()
		fmt.Fprintf(m.Stdout, "%d callers: direct %d calls, %.0f calls/s p50 %d µs p99 %d µs; %s %d calls, %.0f calls/s p50 %d µs p99 %d µs\n",
			callers, ds.Count(), dRate, dP50, dP99, gs.Name, gs.Count(), gRate, gP50, gP99)
		if callers == 16 {
			res.DirectPerS, res.GovernedPerS = dRate, gRate
			if dRate > 0 {
				res.Ratio = bench.Round(gRate/dRate, 3)
			}
		} else {
			res.AddedP50us = gP50 - dP50
		}
	}
	if cpu1, ok := gov.cpu(); ok && cpuKnown && governedCalls > 0 {
		res.CPUPerCallUS = bench.Round(float64((cpu1-cpu0).Microseconds())/float64(governedCalls), 1)
		fmt.Fprintf(m.Stdout, "served gateway CPU: %v over %d governed calls, %.0f µs a call\n", (cpu1 - cpu0).Round(time.Millisecond), governedCalls, res.CPUPerCallUS)
	}
	if alloc1, ok := gov.allocated(); ok && allocKnown && governedCalls > 0 {
		res.AllocPerCallBytes = (alloc1 - alloc0) / governedCalls
		fmt.Fprintf(m.Stdout, "served gateway allocation: %d bytes a call\n", res.AllocPerCallBytes)
	}
	return res, nil
}

// governed is the governed side of a bench: how its calls reach the
// gateway.
type governed struct {
	side      func(callers int) *bench.Side
	cpu       func() (time.Duration, bool)
	allocated func() (int64, bool)
	close     func()
}

// governedDoor opens the gateway b.door names: a served one for mcp and
// v1, an in-process stack for none.
func (m *Main) governedDoor(ctx context.Context, dir string, b upstreamBench) (governed, error) {
	if b.door == doorSDK {
		return sdkDoor(ctx, b)
	}
	if b.door == doorNone {
		st, err := m.benchStack(ctx, dir, b)
		if err != nil {
			return governed{}, err
		}
		return governed{
			side:      func(int) *bench.Side { return governedSide(st, b) },
			cpu:       func() (time.Duration, bool) { return 0, false },
			allocated: func() (int64, bool) { return 0, false },
			close:     func() { st.Close() },
		}, nil
	}
	s, err := m.startServed(ctx, dir, b)
	if err != nil {
		return governed{}, err
	}
	g := governed{side: func(int) *bench.Side { return s.v1Side(b) }, cpu: s.cpu, allocated: s.allocated, close: func() { s.Close() }}
	if b.door == doorMCP {
		if err := s.connect(ctx, 16); err != nil {
			s.Close()
			return governed{}, err
		}
		g.side = func(callers int) *bench.Side { return s.mcpSide(b, callers) }
	}
	return g, nil
}

// benchStack opens a gateway fronting the bench server as upstream "b".
func (m *Main) benchStack(ctx context.Context, dir string, b upstreamBench) (*stack, error) {
	raw, err := json.Marshal(b.config())
	if err != nil {
		return nil, err
	}
	f, err := config.Parse(raw, os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("bench: config: %w", err)
	}
	quiet := *m
	quiet.Stderr = discardLines{}
	return quiet.openStackWith(ctx, stackConfig{data: filepath.Join(dir, "data"), file: f})
}

// discardLines drops the upstream's stderr during a bench.
type discardLines struct{}

func (discardLines) Write(p []byte) (int, error) { return len(p), nil }

// directSide calls the tool on an MCP session of its own.
func directSide(s *mcp.ClientSession, b upstreamBench) *bench.Side {
	return &bench.Side{Name: "direct", Unit: "calls", Do: func(ctx context.Context, _ int64) error {
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: b.tool, Arguments: b.arguments})
		if err == nil && res.IsError {
			err = fmt.Errorf("the tool reported an error: %s", toolText(res))
		}
		return err
	}}
}

// governedSide calls the same tool through the gateway.
func governedSide(st *stack, b upstreamBench) *bench.Side {
	return &bench.Side{Name: "governed", Unit: "calls", Do: func(ctx context.Context, _ int64) error {
		res, err := st.gw.Call(ctx, custody.Call{Tool: "b__" + b.tool, Args: b.arguments, Actor: "bench", Via: "bench"})
		if err == nil && res.ToolError {
			err = fmt.Errorf("the tool reported an error: %s", res.Output)
		}
		return err
	}}
}

// runBenchUpstreamServer serves custody's small Go MCP server on stdio,
// the default server of `custody bench upstream`, or with --http ADDR
// behind the go-sdk's streamable-HTTP handler (JSON responses) on ADDR,
// printing "serving on URL" once it listens: `--door sdk`'s server.
func (m *Main) runBenchUpstreamServer(ctx context.Context, args []string) int {
	fs := m.flags("bench upstream-server", "[--http HOST:PORT]")
	addr := fs.String("http", "", "serve streamable HTTP on `HOST:PORT` instead of stdio")
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if *addr == "" {
		if err := mcptest.ServeStdio(ctx, mcptest.Options{}, io.NopCloser(m.Stdin), nopWriteCloser{m.Stdout}); err != nil {
			return m.fail(err)
		}
		return exitOK
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return m.fail(fmt.Errorf("bench upstream-server: %w", err))
	}
	srv := mcptest.Server(mcptest.Options{})
	hs := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{JSONResponse: true})}
	go func() {
		<-ctx.Done()
		hs.Close()
	}()
	fmt.Fprintf(m.Stdout, "serving on http://%s/mcp\n", ln.Addr())
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return m.fail(err)
	}
	return exitOK
}

// toolText is the text of a tool result's content, for an error message.
func toolText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, " ")
}
