package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody/internal/bench"
)

// The doors `custody bench upstream --door` drives the governed side
// through.
const (
	// doorNone calls the gateway in process, behind no door.
	doorNone = "none"
	// doorMCP is a go-sdk client's streamable-HTTP sessions with a
	// `custody serve` process, on /mcp.
	doorMCP = "mcp"
	// doorV1 is POST /v1/calls on a `custody serve` process.
	doorV1 = "v1"
	// doorSDK is no custody at all: the bench's server behind the
	// go-sdk's own streamable-HTTP handler, called as on doorMCP. It is
	// the floor of any gateway's /mcp: the client's HTTP transport alone.
	doorSDK = "sdk"
)

// servedBench is a `custody serve` child fronting the bench's server,
// reached through its real front door as a user reaches it.
type servedBench struct {
	cmd    *exec.Cmd
	base   string // http://127.0.0.1:PORT
	token  string // the agent token
	client *http.Client
	// sessions are the MCP sessions of door mcp, one per caller.
	sessions []*mcp.ClientSession
	exited   chan error
}

// startServed starts `custody serve` on a loopback port of its own and a
// data directory under dir, fronting b's server as upstream "b" with the
// tool READ, and waits until it serves.
func (m *Main) startServed(ctx context.Context, dir string, b upstreamBench) (*servedBench, error) {
	cfg, err := json.Marshal(b.config())
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "custody.json")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		return nil, fmt.Errorf("bench: write the config: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("bench: find custody's own executable: %w", err)
	}
	token, err := randomToken()
	if err != nil {
		return nil, err
	}
	args := []string{"serve", "--config", path, "--data", filepath.Join(dir, "data"), "--addr", "127.0.0.1:0"}
	if b.cpuprofile != "" {
		args = append(args, "--cpuprofile", b.cpuprofile)
	}
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Env = append(os.Environ(), servedEnv(token)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &limitedBuffer{buf: &stderr, max: 64 << 10}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: start custody serve: %w", err)
	}
	s := &servedBench{cmd: cmd, token: token, exited: make(chan error, 1),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128, MaxConnsPerHost: 0}}}
	base := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "custody serving on "); ok {
				base <- u
			}
		}
		io.Copy(io.Discard, out)
	}()
	go func() { s.exited <- cmd.Wait() }()
	select {
	case s.base = <-base:
		return s, nil
	case err := <-s.exited:
		return nil, fmt.Errorf("bench: custody serve exited before serving (%v): %s", err, strings.TrimSpace(stderr.String()))
	case <-ctx.Done():
		s.Close()
		return nil, ctx.Err()
	}
}

// servedEnv are the settings the served gateway runs with over the
// bench's own environment: its agent token, and none of the settings
// that would take it off its temporary data directory or add to its work
// (an empty value is an unset one).
func servedEnv(token string) []string {
	return []string{"CUSTODY_AGENT_TOKENS=bench:" + token, "CUSTODY_STORE=", "CUSTODY_CONTRACTS=",
		"CUSTODY_NATS=", "CUSTODY_WITNESSES=", "CUSTODY_TLS_CERT=", "CUSTODY_TLS_KEY=", "CUSTODY_BRAIN_ROOM=", "CUSTODY_NOTIFY=", "CUSTODY_SIGNING_KEY="}
}

func randomToken() (string, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("bench: token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// connect opens n MCP sessions with the served gateway's /mcp.
func (s *servedBench) connect(ctx context.Context, n int) error {
	hc := &http.Client{Transport: bearer{token: s.token, next: s.client.Transport}}
	for len(s.sessions) < n {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "custody-bench", Version: "1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.base + "/mcp", HTTPClient: hc}, nil)
		if err != nil {
			return fmt.Errorf("bench: open an MCP session with %s/mcp: %w", s.base, err)
		}
		s.sessions = append(s.sessions, cs)
	}
	return nil
}

// bearer adds the agent's token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (t bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return t.next.RoundTrip(r)
}

// mcpSide calls the tool on the sessions, call n on session n mod
// callers.
func (s *servedBench) mcpSide(b upstreamBench, callers int) *bench.Side {
	return sessionsSide("governed", s.sessions[:callers], "b__"+b.tool, b.arguments)
}

// sessionsSide calls tool on sessions, call n on session n mod their
// number.
func sessionsSide(name string, sessions []*mcp.ClientSession, tool string, arguments json.RawMessage) *bench.Side {
	return &bench.Side{Name: name, Unit: "calls", Do: func(ctx context.Context, n int64) error {
		res, err := sessions[n%int64(len(sessions))].CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: arguments})
		if err == nil && res.IsError {
			err = fmt.Errorf("the tool reported an error: %s", toolText(res))
		}
		return err
	}}
}

// sdkDoor runs custody's own bench server behind the go-sdk's
// streamable-HTTP handler in a process of its own, as a gateway would
// be, and opens 16 sessions with it: doorSDK.
func sdkDoor(ctx context.Context, b upstreamBench) (governed, error) {
	cmd := exec.CommandContext(ctx, b.command, append(append([]string{}, b.args...), "--http", "127.0.0.1:0")...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return governed{}, err
	}
	if err := cmd.Start(); err != nil {
		return governed{}, fmt.Errorf("bench: start the server: %w", err)
	}
	stop := func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}
	sc := bufio.NewScanner(out)
	var url string
	for url == "" && sc.Scan() {
		url, _ = strings.CutPrefix(sc.Text(), "serving on ")
	}
	go io.Copy(io.Discard, out)
	if url == "" {
		stop()
		return governed{}, errors.New("bench: the server over HTTP did not say where it serves")
	}
	var sessions []*mcp.ClientSession
	closeAll := func() {
		for _, cs := range sessions {
			cs.Close()
		}
		stop()
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}
	for len(sessions) < 16 {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "custody-bench", Version: "1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
		if err != nil {
			closeAll()
			return governed{}, fmt.Errorf("bench: open an MCP session with %s: %w", url, err)
		}
		sessions = append(sessions, cs)
	}
	return governed{
		side: func(callers int) *bench.Side {
			return sessionsSide("sdk-http", sessions[:callers], b.tool, b.arguments)
		},
		cpu:       func() (time.Duration, bool) { return 0, false },
		allocated: func() (int64, bool) { return 0, false },
		close:     closeAll,
	}, nil
}

// v1Side calls the tool with POST /v1/calls.
func (s *servedBench) v1Side(b upstreamBench) *bench.Side {
	body, _ := json.Marshal(map[string]any{"tool": "b__" + b.tool, "arguments": b.arguments})
	return &bench.Side{Name: "governed", Unit: "calls", Do: func(ctx context.Context, _ int64) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/v1/calls", bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+s.token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := s.client.Do(req)
		if err != nil {
			return err
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("POST /v1/calls: %s: %s", resp.Status, bytes.TrimSpace(got))
		}
		return nil
	}}
}

// cpu returns the CPU time the served gateway has used so far (its own
// process, not the upstream it runs), and false where the system does
// not say.
func (s *servedBench) cpu() (time.Duration, bool) {
	return processCPU(s.cmd.Process.Pid)
}

// allocated returns the bytes the served gateway has allocated so far, as
// its /metrics says (go_memstats_alloc_bytes_total).
func (s *servedBench) allocated() (int64, bool) {
	resp, err := s.client.Get(s.base + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_memstats_alloc_bytes_total "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// Close ends the sessions and the served gateway.
func (s *servedBench) Close() error {
	for _, cs := range s.sessions {
		cs.Close()
	}
	if s.cmd.Process != nil {
		s.cmd.Process.Signal(os.Interrupt)
		select {
		case <-s.exited:
		case <-time.After(30 * time.Second):
			s.cmd.Process.Kill()
			<-s.exited
		}
	}
	return nil
}

// processCPU reads a process's user and system time from
// /proc/PID/stat, in the kernel's USER_HZ (100 a second on Linux).
func processCPU(pid int) (time.Duration, bool) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name, in parentheses, may hold spaces: fields count
	// from the last ')'.
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(raw[i+1:]))
	// After ')': state is field 3, utime 14, stime 15 (1-based, man 5 proc).
	if len(f) < 13 {
		return 0, false
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, false
	}
	const userHZ = 100
	return time.Duration(ut+st) * time.Second / userHZ, true
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		l.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
