package upstream

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/gate"
)

// addNote adds the note resource and the hello prompt to s.
func addNote(s *mcp.Server) {
	s.AddResource(&mcp.Resource{URI: "child://note", Name: "note"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "a note"}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "hello"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello"}}}}, nil
	})
}

// flakyLedger is the store's ledger until broken: then nothing can be
// appended.
type flakyLedger struct {
	custody.Ledger
	broken atomic.Bool
}

var errLedgerDown = errors.New("the disk is full")

func (l *flakyLedger) Append(ctx context.Context, e custody.Entry) (custody.Entry, error) {
	if l.broken.Load() {
		return custody.Entry{}, errLedgerDown
	}
	return l.Ledger.Append(ctx, e)
}

func (l *flakyLedger) Commit(ctx context.Context, e custody.Entry, changes ...custody.Change) (custody.Entry, error) {
	if l.broken.Load() {
		return custody.Entry{}, errLedgerDown
	}
	return l.Ledger.Commit(ctx, e, changes...)
}

// relayOver builds the relay custody builds over s, recording on l.
func relayOver(t *testing.T, f *fixture, s *Set, l custody.Ledger) *Relay {
	t.Helper()
	cs, err := s.Contracts()
	if err != nil {
		t.Fatal(err)
	}
	reg, err := contract.Load(contract.Options{Extra: cs})
	if err != nil {
		t.Fatalf("the contracts do not compile: %v", err)
	}
	r, err := s.Relay(context.Background(), gate.Config{Registry: reg, Ledger: l, Approvals: f.approvals, State: f.db,
		Now: f.clock.Now, Logger: slog.New(slog.DiscardHandler)}, f.pins)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var relayCall = custody.Call{Actor: "bot", Via: "mcp"}

func TestRelayOverAStdioServer(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	gateFile, pidFile := filepath.Join(dir, "gate"), filepath.Join(dir, "pid")
	s := openSet(t, Config{Servers: []Server{stdioServer("s", map[string]string{envGate: gateFile, envPIDFile: pidFile})},
		Resources: ResourceGovernance{"s+child://*": {}}, Prompts: PromptGovernance{"s__*": {}}})
	l := &flakyLedger{Ledger: f.db}
	r := relayOver(t, f, s, l)
	ctx := context.Background()

	t.Run("PinsKeptApartFromTools", func(t *testing.T) {
		if f.pins.Pinned("s__hello") != "" || r.pins.Pinned("s__hello") == "" {
			t.Errorf("the prompt's pin: tools %q, prompts %q", f.pins.Pinned("s__hello"), r.pins.Pinned("s__hello"))
		}
		raw, err := f.db.State(ctx, nsPromptPin, "s__hello")
		if err != nil || !strings.Contains(string(raw), `"name":"hello"`) {
			t.Errorf("the prompt's pin in state: %s %v", raw, err)
		}
	})
	t.Run("Reads", func(t *testing.T) {
		res, _, err := r.ReadResource(ctx, relayCall, "s+child://note")
		if err != nil || res.Contents[0].Text != "a note" || res.Contents[0].URI != "s+child://note" {
			t.Fatalf("read %+v %v", res, err)
		}
		got, _, err := r.GetPrompt(ctx, relayCall, "s__hello", nil)
		if err != nil || len(got.Messages) != 1 {
			t.Fatalf("get %+v %v", got, err)
		}
	})
	t.Run("ErrNotARelayedCall", func(t *testing.T) {
		// The route is reached only through ReadResource, which carries
		// the result past the gateway.
		_, err := r.Gateway().Call(ctx, custody.Call{Actor: "bot", Tool: ReadRoute + "s+child://*", Args: []byte(`{"uri":"s+child://note"}`)})
		kindOf(t, err, custody.EINVALID)
	})
	t.Run("ErrLedgerDownNothingReturned", func(t *testing.T) {
		l.broken.Store(true)
		defer l.broken.Store(false)
		res, _, err := r.ReadResource(ctx, relayCall, "s+child://note")
		if err == nil || res != nil {
			t.Fatalf("a read whose entry cannot be written returned %+v, %v", res, err)
		}
		got, _, err := r.GetPrompt(ctx, relayCall, "s__hello", nil)
		if err == nil || got != nil {
			t.Fatalf("a get whose entry cannot be written returned %+v, %v", got, err)
		}
	})
	t.Run("ErrUpstreamDownRecorded", func(t *testing.T) {
		if err := os.WriteFile(gateFile, []byte("refuse"), 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := os.FindProcess(readPID(t, pidFile))
		if err != nil {
			t.Fatal(err)
		}
		p.Kill()
		c := s.conn("s")
		waitFor(t, "the session to end", func() bool { return c.current() == nil })
		_, _, err = r.ReadResource(ctx, relayCall, "s+child://note")
		ce := kindOf(t, err, custody.EUNAVAILABLE)
		if ce.Receipt == nil {
			t.Fatalf("the refusal has no receipt: %+v", ce)
		}
		es, _ := f.db.Entries(ctx, custody.Query{})
		last := es[len(es)-1]
		if last.Hash != ce.Receipt.Hash || !strings.Contains(string(last.Body), `"uri":"s+child://note"`) {
			t.Errorf("the refusal's entry %s %s", last.Kind, last.Body)
		}
		_, _, err = r.GetPrompt(ctx, relayCall, "s__hello", nil)
		kindOf(t, err, custody.EUNAVAILABLE)
	})
}

func TestRelayKeysMustGovernSomething(t *testing.T) {
	for name, cfg := range map[string]Config{
		"ErrResourceKey": {Resources: ResourceGovernance{"s+child://nope": {}}},
		"ErrPromptKey":   {Prompts: PromptGovernance{"s__nope": {}}},
	} {
		t.Run(name, func(t *testing.T) {
			cfg.Servers = []Server{stdioServer("s", nil)}
			s, err := Open(context.Background(), cfg)
			if err == nil {
				s.Close()
				t.Fatal("a key that governs nothing was accepted")
			}
			if !strings.Contains(err.Error(), "nope") {
				t.Errorf("error %v does not name the key", err)
			}
		})
	}
}

func TestURIGlob(t *testing.T) {
	for _, c := range []struct {
		pattern, uri string
		want         bool
	}{
		{"s+file:///docs/*", "s+file:///docs/a/b.md", true},
		{"s+file:///docs/*", "s+file:///etc/passwd", false},
		{"s+child://note", "s+child://note", true},
		{"s+child://not?", "s+child://note", true},
		{"s+a.b", "s+aXb", false},
		{"s+[x]", "s+[x]", true},
	} {
		if got := uriMatch(c.pattern, c.uri); got != c.want {
			t.Errorf("uriMatch(%q, %q) = %v, want %v", c.pattern, c.uri, got, c.want)
		}
	}
	g := ResourceGovernance{"s+*": {MaxBytes: 1}, "s+docs://*": {MaxBytes: 2}}
	if p, k, ok := g.For("s+docs://x"); !ok || k != "s+docs://*" || p.MaxBytes != 2 {
		t.Errorf("the most specific key governs: %q %+v", k, p)
	}
}

// noteServer is an MCP server with a tool, the note resource and the
// hello prompt, served over streamable HTTP.
func noteServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	addEcho(s, defaultDescription)
	addNote(s)
	return s
}

func TestRelayApprovals(t *testing.T) {
	f := newFixture(t)
	up := newHTTPUpstream(t, noteServer)
	s := openSet(t, Config{Servers: []Server{{Name: "n", URL: up.URL()}},
		Resources: ResourceGovernance{"n+child://note": {Approval: custody.HumanConfirmation}}, Prompts: PromptGovernance{"n__hello": {}}})
	r := relayOver(t, f, s, f.db)
	ctx := context.Background()
	in := func(trace string) custody.Call { c := relayCall; c.Trace = trace; return c }

	t.Run("ReadHeldUntilApproved", func(t *testing.T) {
		_, _, err := r.ReadResource(ctx, in("t1"), "n+child://note")
		ce := kindOf(t, err, custody.EPENDING)
		f.decide(t, ce.ApprovalRequestID, "approved")
		res, _, err := r.ReadResource(ctx, in("t1"), "n+child://note")
		if err != nil || res.Contents[0].Text != "a note" {
			t.Fatalf("the approved read: %+v %v", res, err)
		}
		// The approval authorised one read.
		_, _, err = r.ReadResource(ctx, in("t1"), "n+child://note")
		kindOf(t, err, custody.ECONFLICT)
	})
	t.Run("ChangedPromptRepinnedOnApproval", func(t *testing.T) {
		changed := make(chan struct{}, 1)
		go func() { <-s.Changed(); changed <- struct{}{} }()
		up.Server().AddPrompt(&mcp.Prompt{Name: "hello", Description: "Now with a twist."},
			func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "twist"}}}}, nil
			})
		waitFor(t, "the prompt to be quarantined", func() bool { return r.pins.Quarantined("n__hello") })
		<-changed
		_, _, err := r.GetPrompt(ctx, in("t2"), "n__hello", nil)
		id := kindOf(t, err, custody.EDENIED).ApprovalRequestID
		if id == "" {
			t.Fatal("the quarantine names no re-pin request")
		}
		f.decide(t, id, "approved")
		got, _, err := r.GetPrompt(ctx, in("t2"), "n__hello", nil)
		if err != nil || got.Messages[0].Content.(*mcp.TextContent).Text != "twist" {
			t.Fatalf("the re-pinned prompt: %+v %v", got, err)
		}
		es, _ := f.db.Entries(ctx, custody.Query{Kind: KindPromptRepinned})
		if len(es) != 1 || es[0].Actor != "ana" || !strings.Contains(string(es[0].Body), "Now with a twist.") {
			t.Errorf("prompt.repinned %+v", es)
		}
		if ps := r.Prompts(); len(ps) != 1 || ps[0].Description != "Now with a twist." {
			t.Errorf("prompts listed %+v: the re-pinned definition", ps)
		}
	})
}

func TestRelayAServerWithoutTools(t *testing.T) {
	f := newFixture(t)
	up := newHTTPUpstream(t, func() *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "only-notes", Version: "1"}, nil)
		addNote(s)
		return s
	})
	s := openSet(t, Config{Servers: []Server{{Name: "n", URL: up.URL()}}, Resources: ResourceGovernance{"n+child://note": {}}})
	if len(s.Offers()) != 0 {
		t.Errorf("offers %+v", s.Offers())
	}
	r := relayOver(t, f, s, f.db)
	if res, _, err := r.ReadResource(context.Background(), relayCall, "n+child://note"); err != nil || res.Contents[0].Text != "a note" {
		t.Errorf("read %+v %v", res, err)
	}
	if ps := r.Prompts(); len(ps) != 0 {
		t.Errorf("prompts %+v: none governed", ps)
	}
}

// TestAServerAskingBeforeTheRelayIsBuiltIsRecorded: a server may ask the
// client for its roots as soon as it is initialized, before custody has
// built the relay that records such requests; the request waits for it,
// and is recorded and answered (with no client to ask, refused), not
// answered unrecorded.
func TestAServerAskingBeforeTheRelayIsBuiltIsRecorded(t *testing.T) {
	f := newFixture(t)
	asked, answered := make(chan struct{}), make(chan error, 1)
	server := mcp.NewServer(&mcp.Implementation{Name: "eager", Version: "1"}, &mcp.ServerOptions{
		InitializedHandler: func(ctx context.Context, r *mcp.InitializedRequest) {
			go func() {
				close(asked)
				//lint:ignore SA1019 roots are deprecated by SEP-2577 and still relayed.
				_, err := r.Session.ListRoots(context.WithoutCancel(ctx), nil)
				answered <- err
			}()
		}})
	addEcho(server, defaultDescription)
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	read := Policy{Access: custody.Read, Effect: custody.EffectNone, Approval: custody.NotRequired}
	s := openSet(t, Config{Servers: []Server{{Name: "eager", URL: srv.URL}}, Governance: Governance{"eager__*": read}})
	<-asked
	relayOver(t, f, s, f.db)
	if err := <-answered; err == nil {
		t.Fatal("the server's roots request was answered with roots, with no client to ask")
	}
	es, err := f.db.Entries(context.Background(), custody.Query{Kind: custody.KindCallFailed})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if strings.Contains(string(e.Body), `"tool":"client/roots:eager"`) {
			return
		}
	}
	t.Fatalf("no call.failed entry for the server's roots request among %d failures", len(es))
}
