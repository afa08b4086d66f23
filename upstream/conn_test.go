package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody/gate"
)

// result is the part of a CallToolResult the tests read.
type result struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

// call calls tool on c and decodes the result.
func call(t *testing.T, c *Conn, tool, args string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := c.Call(ctx, tool, json.RawMessage(args), nil)
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	var r result
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("call %s: the result is not a CallToolResult: %v: %s", tool, err, out)
	}
	return r
}

// whereIs asks the server where it runs.
func whereIs(t *testing.T, c *Conn) whereOut {
	t.Helper()
	var w whereOut
	if err := json.Unmarshal(call(t, c, "where", `{}`).StructuredContent, &w); err != nil {
		t.Fatal(err)
	}
	return w
}

// alive reports whether the process pid exists and has not been reaped.
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	return p.Signal(syscall.Signal(0)) == nil
}

// readPID reads the process id a child wrote.
func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	waitFor(t, "the child's process id", func() bool {
		b, err := os.ReadFile(path)
		pid, _ = strconv.Atoi(string(b))
		return err == nil && pid > 0
	})
	return pid
}

func toolNames(tools []*mcp.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	slices.Sort(out)
	return out
}

func TestDialNeedsOneWayToTheServer(t *testing.T) {
	for _, tt := range []struct {
		name string
		srv  Server
	}{
		{"ErrNeither", Server{Name: "nowhere"}},
		{"ErrBoth", Server{Name: "both", Command: os.Args[0], URL: "http://127.0.0.1:1/mcp"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Dial(context.Background(), tt.srv, ConnOptions{})
			if err == nil {
				c.Close()
				t.Fatal("dialled")
			}
			if !strings.Contains(err.Error(), tt.srv.Name) {
				t.Errorf("the error does not name the upstream: %v", err)
			}
		})
	}
}

func TestDialStdio(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(envInherited, "from-custody")
	srv := stdioServer("s", map[string]string{envValue: "from-config"})
	srv.Dir = dir
	c := dial(t, srv, ConnOptions{})

	if c.Name() != "s" || !srv.Stdio() {
		t.Errorf("name %q, stdio %v", c.Name(), srv.Stdio())
	}
	if got := toolNames(c.Tools()); !slices.Equal(got, []string{"block", "crash", "echo", "fail", "where"}) {
		t.Errorf("tools %v", got)
	}
	t.Run("ArgumentsAndResult", func(t *testing.T) {
		r := call(t, c, "echo", `{"message":"hi"}`)
		if string(r.StructuredContent) != `{"echo":"hi"}` || r.IsError {
			t.Errorf("result %+v", r)
		}
	})
	t.Run("EnvironmentAndDirectory", func(t *testing.T) {
		w := whereIs(t, c)
		want, _ := filepath.EvalSymlinks(dir)
		got, _ := filepath.EvalSymlinks(w.Dir)
		if w.Value != "from-config" || w.Inherited != "from-custody" || got != want {
			t.Errorf("the server runs with %+v, want value from-config, inherited from-custody, dir %s", w, want)
		}
	})
	t.Run("ToolErrorIsAResult", func(t *testing.T) {
		r := call(t, c, "fail", `{}`)
		if !r.IsError || len(r.Content) == 0 || !strings.Contains(r.Content[0].Text, "failed on purpose") {
			t.Errorf("result %+v", r)
		}
	})
	t.Run("ErrUnknownTool", func(t *testing.T) {
		_, err := c.Call(context.Background(), "nonesuch", json.RawMessage(`{}`), nil)
		if err == nil || errors.Is(err, ErrDown) {
			t.Errorf("a call of a tool the server lacks: %v", err)
		}
		call(t, c, "echo", `{"message":"still up"}`)
	})
	t.Run("ErrArgumentsTheServerRefuses", func(t *testing.T) {
		// The server checks the arguments itself; its refusal reaches
		// the caller as a tool error, and nothing is repaired here.
		r := call(t, c, "echo", `{"message":7}`)
		if !r.IsError {
			t.Errorf("result %+v", r)
		}
	})
}

func TestCallTimeoutKeepsTheSession(t *testing.T) {
	c := dial(t, stdioServer("s", nil), ConnOptions{})
	before := whereIs(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Call(ctx, "block", json.RawMessage(`{}`), nil)
	if err == nil || errors.Is(err, ErrDown) {
		t.Fatalf("a call past its deadline: %v", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the error does not say the deadline passed: %v", err)
	}
	if after := whereIs(t, c); after.PID != before.PID {
		t.Errorf("a timed-out call restarted the server: pid %d, then %d", before.PID, after.PID)
	}
}

func TestConnRestartsACrashedServer(t *testing.T) {
	var rec logRecorder
	changed := newSignal()
	c := dial(t, stdioServer("s", nil), ConnOptions{Logger: rec.logger(), ToolsChanged: changed.fire})
	first := whereIs(t, c)

	if _, err := c.Call(context.Background(), "crash", json.RawMessage(`{}`), nil); err == nil {
		t.Fatal("a call whose server exited mid-call succeeded")
	}
	// Once custody knows the session ended, the next call waits for the
	// restart instead of failing.
	waitFor(t, "the session's end to be noticed", func() bool { return c.Err() != nil || len(rec.find("upstream session restarted")) > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := c.Call(ctx, "echo", json.RawMessage(`{"message":"after"}`), nil); err != nil || !strings.Contains(string(out), "after") {
		t.Fatalf("the call after the crash: %s %v", out, err)
	}
	changed.wait(t, "the tools to be listed again after the restart")
	second := whereIs(t, c)
	if second.PID == first.PID {
		t.Fatalf("the same process %d answers after the crash", first.PID)
	}
	waitFor(t, "the crashed process to be reaped", func() bool { return !alive(first.PID) })
	if got := toolNames(c.Tools()); len(got) != 5 {
		t.Errorf("tools after the restart %v", got)
	}
	ended, restarted := rec.find("upstream session ended; restarting"), rec.find("upstream session restarted")
	if len(ended) != 1 || len(restarted) != 1 || ended[0].attrs["upstream"] != "s" {
		t.Errorf("logged %d ends and %d restarts: %+v", len(ended), len(restarted), ended)
	}

	// A second crash is recovered from as well.
	c.Call(context.Background(), "crash", json.RawMessage(`{}`), nil)
	changed.wait(t, "the second restart")
	if third := whereIs(t, c); third.PID == second.PID {
		t.Errorf("the same process %d answers after the second crash", second.PID)
	}
}

func TestConnBacksOffWhileTheServerCannotStart(t *testing.T) {
	var rec logRecorder
	gate := filepath.Join(t.TempDir(), "gate")
	changed := newSignal()
	c := dial(t, stdioServer("s", map[string]string{envGate: gate}), ConnOptions{Logger: rec.logger(), ToolsChanged: changed.fire})
	if err := os.WriteFile(gate, []byte("refuse"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.Call(context.Background(), "crash", json.RawMessage(`{}`), nil)

	failed := func() []logged { return rec.find("upstream restart failed") }
	waitFor(t, "three failed restarts", func() bool { return len(failed()) >= 3 })
	for i, want := range []time.Duration{400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond} {
		if got := failed()[i].attrs["next_in"]; got != want.String() {
			t.Errorf("after failure %d the next restart is in %s, want %s", i+1, got, want)
		}
	}
	t.Run("ErrDownOnceTheCallMayTakeNoLonger", func(t *testing.T) {
		// The server cannot start while the gate refuses: the call waits
		// for it as long as its context allows, then fails saying why.
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := c.Call(ctx, "echo", json.RawMessage(`{"message":"hi"}`), nil)
		if !errors.Is(err, ErrDown) || !strings.Contains(err.Error(), "connect") || !strings.Contains(err.Error(), "waited") {
			t.Errorf("a call while the server is down: %v", err)
		}
	})
	t.Run("ToolsOfTheLastListingKept", func(t *testing.T) {
		if got := toolNames(c.Tools()); len(got) != 5 {
			t.Errorf("tools while down %v", got)
		}
	})
	t.Run("StderrOfTheFailedStartLogged", func(t *testing.T) {
		waitFor(t, "the refusal on stderr", func() bool {
			for _, l := range rec.find("upstream stderr") {
				if l.attrs["line"] == "refusing to start" {
					return true
				}
			}
			return false
		})
	})

	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	changed.wait(t, "the server to start again")
	call(t, c, "echo", `{"message":"back"}`)
}

func TestConnLogsStderrLineByLine(t *testing.T) {
	var rec logRecorder
	long := strings.Repeat("x", 3*maxLogLine+100)
	stderr := "first line\r\n" + long + "\nlast line\n"
	dial(t, stdioServer("s", map[string]string{envStderr: stderr}), ConnOptions{Logger: rec.logger()})

	lines := func() []logged { return rec.find("upstream stderr") }
	waitFor(t, "three stderr lines", func() bool { return len(lines()) >= 3 })
	got := lines()
	if len(got) != 3 {
		t.Fatalf("logged %d lines, want 3 (a long line once): %+v", len(got), got)
	}
	for i, want := range []struct{ line, truncated string }{
		{"first line", "false"},
		{long[:maxLogLine], "true"},
		{"last line", "false"},
	} {
		if got[i].attrs["line"] != want.line || got[i].attrs["truncated"] != want.truncated || got[i].attrs["upstream"] != "s" {
			t.Errorf("line %d: %.60q truncated %s (upstream %q), want %.60q truncated %s",
				i, got[i].attrs["line"], got[i].attrs["truncated"], got[i].attrs["upstream"], want.line, want.truncated)
		}
	}
}

// TestDialFailsOnAServerItCannotUse: with Required, a server that cannot
// serve fails Dial and is stopped.
func TestDialFailsOnAServerItCannotUse(t *testing.T) {
	for _, tt := range []struct {
		name, mode string
		// cancel gives up on the dial once the child runs.
		cancel bool
	}{
		{"ErrExitsAtOnce", childExit, false},
		{"ErrNotJSONRPC", childGarbage, false},
		{"ErrNeverAnswers", childSilent, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pid")
			srv := Server{Name: "bad", Command: os.Args[0], Env: map[string]string{envChild: tt.mode, envPIDFile: pidFile}}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if tt.cancel {
				go func() {
					for ctx.Err() == nil {
						if b, _ := os.ReadFile(pidFile); len(b) > 0 {
							cancel()
						}
						time.Sleep(10 * time.Millisecond)
					}
				}()
			}
			c, err := Dial(ctx, srv, ConnOptions{Required: true})
			if err == nil {
				c.Close()
				t.Fatal("dialled a server that cannot serve")
			}
			if !strings.Contains(err.Error(), `upstream "bad"`) {
				t.Errorf("the error does not name the upstream: %v", err)
			}
			pid := readPID(t, pidFile)
			waitFor(t, "the child to be stopped", func() bool { return !alive(pid) })
		})
	}
	t.Run("ErrNoSuchCommand", func(t *testing.T) {
		_, err := Dial(context.Background(), Server{Name: "gone", Command: filepath.Join(t.TempDir(), "no-such-server")}, ConnOptions{Required: true})
		if err == nil || !strings.Contains(err.Error(), `upstream "gone"`) {
			t.Errorf("dial: %v", err)
		}
	})
}

func TestCloseStopsTheServer(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	c, err := Dial(context.Background(), stdioServer("s", map[string]string{envPIDFile: pidFile}), ConnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pid := readPID(t, pidFile)
	if !alive(pid) {
		t.Fatalf("the server %d is not running", pid)
	}
	if err := c.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if alive(pid) {
		t.Errorf("the server %d runs on after Close", pid)
	}
	if _, err := c.Call(context.Background(), "echo", json.RawMessage(`{"message":"hi"}`), nil); !errors.Is(err, ErrDown) {
		t.Errorf("a call after Close: %v", err)
	}
}

func TestCloseWhileRestarting(t *testing.T) {
	var rec logRecorder
	gate := filepath.Join(t.TempDir(), "gate")
	c, err := Dial(context.Background(), stdioServer("s", map[string]string{envGate: gate}), ConnOptions{Logger: rec.logger()})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(gate, []byte("refuse"), 0o600)
	c.Call(context.Background(), "crash", json.RawMessage(`{}`), nil)
	waitFor(t, "a failed restart", func() bool { return len(rec.find("upstream restart failed")) > 0 })

	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("close: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close waits on the restart backoff")
	}
	n := len(rec.find("upstream restart failed"))
	os.WriteFile(gate, nil, 0o600)
	if _, err := c.Call(context.Background(), "echo", json.RawMessage(`{"message":"hi"}`), nil); !errors.Is(err, ErrDown) {
		t.Errorf("a call after Close: %v", err)
	}
	if len(rec.find("upstream session restarted")) != 0 || len(rec.find("upstream restart failed")) != n {
		t.Error("the supervisor went on after Close")
	}
}

func TestStreamableHTTP(t *testing.T) {
	up := newHTTPUpstream(t, echoServer(defaultDescription))
	changed := newSignal()
	var rec logRecorder
	c := dial(t, Server{Name: "h", URL: up.URL(), Headers: map[string]string{"Authorization": "Bearer k-1", "X-Team": "ward"}},
		ConnOptions{Logger: rec.logger(), ToolsChanged: changed.fire, Version: "1.2.3"})

	if r := call(t, c, "echo", `{"message":"over http"}`); string(r.StructuredContent) != `{"echo":"over http"}` {
		t.Errorf("result %+v", r)
	}
	t.Run("HeadersOnEveryRequest", func(t *testing.T) {
		hs := up.Headers()
		if len(hs) == 0 {
			t.Fatal("no requests")
		}
		for i, h := range hs {
			if h.Get("Authorization") != "Bearer k-1" || h.Get("X-Team") != "ward" {
				t.Errorf("request %d carries %v", i, h)
			}
		}
	})
	t.Run("ListChangedRelists", func(t *testing.T) {
		addEcho(up.Server(), "Echo, and something else.")
		changed.wait(t, "the tools to be listed again")
		tools := c.Tools()
		if len(tools) != 2 || tools[slices.IndexFunc(tools, func(t *mcp.Tool) bool { return t.Name == "echo" })].Description != "Echo, and something else." {
			t.Errorf("tools after list_changed %v", toolNames(tools))
		}
		if len(rec.find("upstream session restarted")) != 0 {
			t.Error("a list change restarted the session")
		}
	})
	t.Run("SessionLostIsRestarted", func(t *testing.T) {
		before := changed.n.Load()
		up.Restart(echoServer("Redeployed.")())
		changed.wait(t, "the session to be restarted")
		waitFor(t, "the new listing", func() bool {
			ts := c.Tools()
			return len(ts) == 2 && ts[slices.IndexFunc(ts, func(t *mcp.Tool) bool { return t.Name == "echo" })].Description == "Redeployed."
		})
		if changed.n.Load() <= before {
			t.Error("no ToolsChanged after the restart")
		}
		call(t, c, "echo", `{"message":"again"}`)
	})
}

// TestACallOnAnEndedSessionIsNotSent: a session that has ended, before
// custody has seen it end, refuses a call without sending it; the call
// is then made on the next session, not failed as of unknown outcome.
func TestACallOnAnEndedSessionIsNotSent(t *testing.T) {
	up := newHTTPUpstream(t, echoServer(defaultDescription))
	c := dial(t, Server{Name: "h", URL: up.URL()}, ConnOptions{})
	s := c.current()
	s.Close()
	params := &mcp.CallToolParams{Name: "echo", Arguments: json.RawMessage(`{"message":"late"}`)}
	if _, err := c.callOn(context.Background(), s, params); !errors.Is(err, errNotSent) || errors.Is(err, gate.ErrOutcomeUnknown) {
		t.Fatalf("a call on an ended session: %v, want it not sent", err)
	}
	if r := call(t, c, "echo", `{"message":"next"}`); string(r.StructuredContent) != `{"echo":"next"}` {
		t.Errorf("the call after: %+v", r)
	}
}

func TestDialHTTPFails(t *testing.T) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html>a web page</html>"))
	}))
	defer page.Close()
	for _, tt := range []struct{ name, url string }{
		{"ErrNotMCP", page.URL},
		{"ErrClosedPort", "http://127.0.0.1:1/mcp"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := Dial(ctx, Server{Name: "h", URL: tt.url}, ConnOptions{Required: true})
			if err == nil {
				c.Close()
				t.Fatal("dialled")
			}
			if !strings.Contains(err.Error(), `upstream "h"`) {
				t.Errorf("the error does not name the upstream: %v", err)
			}
		})
	}
}
