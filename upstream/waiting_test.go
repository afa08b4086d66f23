package upstream

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/custody-dev/custody"
)

// fastBackoff keeps the tests of a server that comes up later short; the
// tests wait for the server, never for a time.
const fastBackoff = 20 * time.Millisecond

// gatedServer is the stdio test server, which exits at once while the
// file gate holds "refuse": a server that is down until open is called.
func gatedServer(t *testing.T, name string) (srv Server, open func()) {
	t.Helper()
	gate := filepath.Join(t.TempDir(), "gate")
	if err := os.WriteFile(gate, []byte("refuse"), 0o600); err != nil {
		t.Fatal(err)
	}
	return stdioServer(name, map[string]string{envGate: gate}), func() {
		if err := os.WriteFile(gate, []byte("serve"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDialKeepsADownServer: a server that cannot be reached is a Conn
// that is down, whose calls fail as down, and which comes up by itself.
func TestDialKeepsADownServer(t *testing.T) {
	for _, tt := range []struct{ name string }{{"ExitsAtOnce"}, {"NoSuchCommand"}} {
		t.Run(tt.name, func(t *testing.T) {
			srv, open := gatedServer(t, "d")
			if tt.name == "NoSuchCommand" {
				path := filepath.Join(t.TempDir(), "server")
				srv.Command = path
				open = func() {
					if err := os.Symlink(os.Args[0], path); err != nil {
						t.Fatal(err)
					}
				}
				srv.Env = map[string]string{envChild: childServe}
			}
			sig := newSignal()
			c := dial(t, srv, ConnOptions{ToolsChanged: sig.fire, MinBackoff: fastBackoff, MaxBackoff: fastBackoff})
			if c.Err() == nil || c.Listed() || len(c.Tools()) != 0 {
				t.Fatalf("a server that cannot serve is up: err %v listed %v tools %d", c.Err(), c.Listed(), len(c.Tools()))
			}
			if !strings.Contains(c.Err().Error(), `upstream "d"`) {
				t.Errorf("the error does not name the upstream: %v", c.Err())
			}
			// A call waits for the server as long as its context lets it.
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			if _, err := c.Call(ctx, "echo", []byte(`{"message":"hi"}`), nil); !errors.Is(err, ErrDown) {
				t.Errorf("a call of a down server: %v", err)
			}
			open()
			waitFor(t, "the server to come up", func() bool { return c.Err() == nil && c.Listed() })
			sig.wait(t, "ToolsChanged")
			if len(c.Tools()) == 0 {
				t.Error("the server came up with no tools")
			}
			if _, err := c.Call(context.Background(), "echo", []byte(`{"message":"hi"}`), nil); err != nil {
				t.Errorf("a call once up: %v", err)
			}
		})
	}
}

// logBuffer is a logger whose lines a test reads.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestOpenKeepsADownServer: one server down does not stop Open; its
// exact keys are waiting tools, unavailable and recorded; when it comes
// up its tools are offered, pinned as they first appear, and callable.
func TestOpenKeepsADownServer(t *testing.T) {
	f := newFixture(t)
	up := newHTTPUpstream(t, echoServer(defaultDescription))
	srv, open := gatedServer(t, "d")
	read := Policy{Access: custody.Read, Effect: custody.EffectNone, Approval: custody.NotRequired}
	write := Policy{Access: custody.Write, Effect: custody.EffectConsequential, Approval: custody.HumanConfirmation}
	var log logBuffer
	s := openSet(t, Config{Servers: []Server{{Name: "h", URL: up.URL()}, srv},
		Governance: Governance{"h__echo": read, "d__echo": write, "d__wh*": read, "d__typo": read},
		Logger:     slog.New(slog.NewTextHandler(&log, nil)), MinBackoff: fastBackoff, MaxBackoff: fastBackoff})
	down := s.Down()
	if len(down) != 1 || down[0].Name != "d" || !down[0].Waiting || down[0].Err == "" {
		t.Fatalf("down %+v, want d, waiting, with its error", down)
	}
	if !strings.Contains(log.String(), "d__wh*") {
		t.Errorf("no warning of the key that cannot be checked yet:\n%s", log.String())
	}
	g := gateway(t, f, s)
	if _, ok := g.Tool("d__echo"); !ok {
		t.Fatal("the exact key of the down server is not in the envelope")
	}
	t.Run("WaitingToolIsUnavailable", func(t *testing.T) {
		_, err := gcall(g, "d__echo", `{"message":"hi"}`)
		kindOf(t, err, custody.EUNAVAILABLE)
		es, _ := f.db.Entries(context.Background(), custody.Query{Kind: custody.KindCallRefused})
		if len(es) != 1 || es[0].Refs[RefUpstream] != "d" {
			t.Errorf("call.refused %+v", es)
		}
		if ps, _ := f.approvals.List(context.Background(), custody.ApprovalPending); len(ps) != 0 {
			t.Errorf("a call of a down tool asked for approval: %+v", ps)
		}
	})
	t.Run("UpServerServes", func(t *testing.T) {
		if _, err := gcall(g, "h__echo", `{"message":"hi"}`); err != nil {
			t.Fatal(err)
		}
	})
	rev := s.Revision()
	open()
	waitFor(t, "d's tools to be offered", func() bool { return s.Revision() != rev })
	if down := s.Down(); len(down) != 0 {
		t.Errorf("down %+v once d is up", down)
	}
	offers := map[string]Offer{}
	for _, o := range s.Offers() {
		offers[o.Exposed] = o
	}
	if o := offers["d__echo"]; o.Waiting || o.Tool == nil || o.Key != "d__echo" {
		t.Errorf("d__echo offered as %+v", o)
	}
	if o := offers["d__where"]; o.Key != "d__wh*" {
		t.Errorf("d__where offered as %+v", o)
	}
	if _, ok := offers["d__typo"]; ok {
		t.Error("a key the server offers nothing for is still offered")
	}
	waitFor(t, "d__echo to be pinned", func() bool { return f.pins.Pinned("d__echo") != "" })
	waitFor(t, "the key that governs nothing to be reported", func() bool {
		return strings.Contains(log.String(), `d__typo`) && strings.Contains(log.String(), "fix the configuration")
	})
	g = gateway(t, f, s)
	if _, err := gcall(g, "d__where", `{}`); err != nil {
		t.Errorf("a tool of the server that came up: %v", err)
	}
	es, _ := f.db.Entries(context.Background(), custody.Query{Kind: KindToolPinned})
	pinned := map[string]bool{}
	for _, e := range es {
		pinned[e.Trace] = true
	}
	if !pinned[pinTrace("d__echo")] || !pinned[pinTrace("d__where")] {
		t.Errorf("tool.pinned entries %v: want d__echo and d__where", pinned)
	}
}

// TestOpenRefusesTyposBesideADownServer: a key that cannot name the down
// server's tools is still a typo.
func TestOpenRefusesTyposBesideADownServer(t *testing.T) {
	up := newHTTPUpstream(t, echoServer(defaultDescription))
	srv, _ := gatedServer(t, "d")
	read := Policy{Access: custody.Read, Effect: custody.EffectNone, Approval: custody.NotRequired}
	s, err := Open(context.Background(), Config{Servers: []Server{{Name: "h", URL: up.URL()}, srv},
		Governance: Governance{"h__ecno": read, "d__*": read}, MinBackoff: fastBackoff, MaxBackoff: fastBackoff})
	if err == nil {
		s.Close()
		t.Fatal("opened")
	}
	if !strings.Contains(err.Error(), `["h__ecno"]`) {
		t.Errorf("error %q does not name just the typo", err)
	}
}

func TestMayGovern(t *testing.T) {
	prefixes := []string{"down__"}
	for _, tt := range []struct {
		key  string
		want bool
	}{
		{"down__echo", true},
		{"down__*", true},
		{"do*", true},
		{"*", true},
		{"*__echo", true},
		{"up__echo", false},
		{"up__*", false},
		{"downer__echo", false},
		{"quote", false},
	} {
		if got := mayGovern(tt.key, prefixes); got != tt.want {
			t.Errorf("mayGovern(%q) = %v, want %v", tt.key, got, tt.want)
		}
	}
}
