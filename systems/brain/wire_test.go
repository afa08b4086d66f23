package brain

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// counting is an Answerer that counts the packets that reached it.
type counting struct {
	n    atomic.Int64
	next Answerer
}

func (c *counting) Answer(ctx context.Context, job string, packet json.RawMessage) (json.RawMessage, error) {
	c.n.Add(1)
	return c.next.Answer(ctx, job, packet)
}

// memoryBrain connects each Send to srv over an in-memory MCP transport.
func memoryBrain(t testing.TB, srv *mcp.Server) Dialer {
	return func() (mcp.Transport, error) {
		st, ct := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(context.Background(), st, nil)
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { ss.Close() })
		return ct, nil
	}
}

// rawBrain is a Brain whose brain_packet tool replies reply, whatever it is
// asked.
func rawBrain(tool, reply string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "fake-brain", Version: "0"}, nil)
	s.AddTool(&mcp.Tool{Name: tool, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: reply}}}, nil
		})
	return s
}

type wireFixture struct {
	room   *Room
	wire   *Wire
	brain  *counting
	ledger custody.Ledger
}

func newWireFixture(t testing.TB) *wireFixture {
	reg := registry(t)
	c := &counting{next: deterministic{}}
	f := &wireFixture{room: exampleRoom(t), brain: c, ledger: newLedger(t)}
	f.wire = &Wire{Contracts: reg, Ledger: f.ledger, Room: f.room,
		Brain: memoryBrain(t, NewServer(ServerOptions{Contracts: reg, Answerer: c}))}
	return f
}

func (f *wireFixture) packet(t testing.TB, job string) []byte {
	return marshal(t, build(t, f.room, BuildOptions{Job: job, Focus: "claim-core"}))
}

func TestSendAnswersAndRecordsEveryJob(t *testing.T) {
	f := newWireFixture(t)
	ctx := context.Background()
	for _, job := range Jobs() {
		t.Run(job, func(t *testing.T) {
			packet := f.packet(t, job)
			a, err := f.wire.Send(ctx, packet)
			if err != nil || !a.Answered() {
				t.Fatalf("Send = %+v, %v", a, err)
			}
			if a.Response.JobID != job || len(a.Response.Suggestions) == 0 {
				t.Fatalf("response %+v", a.Response)
			}
			es, err := f.ledger.Entries(ctx, custody.Query{Trace: a.Trace})
			if err != nil || len(es) != 2 {
				t.Fatalf("ledger trace has %d entries (%v), want packet and reply", len(es), err)
			}
			if es[0].Kind != kindPacketSent || string(es[0].Body) != string(packet) {
				t.Errorf("first entry %s does not hold the exact packet", es[0].Kind)
			}
			if es[1].Kind != kindReplyReceived || string(es[1].Body) != string(a.Raw) {
				t.Errorf("second entry %s does not hold the exact reply", es[1].Kind)
			}
			rep, err := f.room.Ingest(ctx, job, "claim-core", *a.Response)
			if err != nil || len(rep.Nodes) != len(a.Response.Suggestions) {
				t.Fatalf("ingest = %+v, %v", rep, err)
			}
		})
	}
}

// mutate decodes packet, applies fn and encodes it again.
func mutate(t testing.TB, packet []byte, fn func(p map[string]any)) []byte {
	var p map[string]any
	if err := json.Unmarshal(packet, &p); err != nil {
		t.Fatal(err)
	}
	fn(p)
	return marshal(t, p)
}

func obj(v any, path ...string) map[string]any {
	m := v.(map[string]any)
	for _, k := range path {
		m = m[k].(map[string]any)
	}
	return m
}

func chainWith(edges int, scope int) map[string]any {
	es := make([]any, edges)
	for i := range es {
		es[i] = map[string]any{"from": "a", "to": "b", "hop_distance": 1}
	}
	return map[string]any{"edges": es, "slice_scope": scope, "slice_rationale": "r", "fetched_at": "2026-02-26T08:00:00Z"}
}

const leakText = "FULL TRANSCRIPT: alice@example.com said the password is hunter2"

func TestSendRefusesNeverStrips(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(p map[string]any)
		kind   string
		schema bool // refused by the in schema, with violations
	}{
		{"ErrExtraFieldAtRoot", func(p map[string]any) { p["transcript"] = leakText }, custody.EINVALID, true},
		{"ErrExtraFieldInFocusNode", func(p map[string]any) { obj(p, "active_context", "focus_node")["body"] = leakText }, custody.EINVALID, true},
		{"ErrSummary121Chars", func(p map[string]any) {
			obj(p, "active_context", "focus_node")["summary"] = strings.Repeat("s", 121)
		}, custody.EINVALID, true},
		{"ErrSliceScope4", func(p map[string]any) { obj(p, "local_graph_summary")["framework_chain_hint"] = chainWith(2, 4) }, custody.EINVALID, true},
		{"ErrChainEdges51", func(p map[string]any) { obj(p, "local_graph_summary")["framework_chain_hint"] = chainWith(51, 2) }, custody.EINVALID, true},
		{"ErrPrivacyAllowExcerpts", func(p map[string]any) { p["privacy_mode"] = allowExcerpts }, custody.EINVALID, true},
		{"ErrPrivacyAllowFilenames", func(p map[string]any) { p["privacy_mode"] = allowFilenames }, custody.EINVALID, true},
		{"ErrMissingConstraints", func(p map[string]any) { delete(p, "constraints") }, custody.EINVALID, true},
		{"ErrOriginTestFixture", func(p map[string]any) { p["origin"] = originTestFixture }, custody.EDENIED, false},
		{"ErrOriginUnknown", func(p map[string]any) { p["origin"] = "browser" }, custody.EDENIED, false},
		{"ErrUnknownJob", func(p map[string]any) { p["job"] = "write_poem" }, custody.EINVALID, false},
	}
	f := newWireFixture(t)
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := f.room.EventsOfType(ctx, eventPacketRejected)
			packet := mutate(t, f.packet(t, "suggest_next_move"), tt.edit)
			_, err := f.wire.Send(ctx, packet)
			var e *custody.Error
			if !errors.As(err, &e) || e.Kind != tt.kind {
				t.Fatalf("Send err = %v, want kind %s", err, tt.kind)
			}
			if tt.schema && len(e.Violations) == 0 {
				t.Errorf("schema refusal without violations")
			}
			if e.Receipt == nil {
				t.Errorf("refusal not recorded on the ledger")
			}
			after, _ := f.room.EventsOfType(ctx, eventPacketRejected)
			if len(after) != len(before)+1 {
				t.Errorf("%d brain_packet_rejected events, want %d", len(after), len(before)+1)
			}
		})
	}
	if n := f.brain.n.Load(); n != 0 {
		t.Errorf("the Brain saw %d refused packets", n)
	}
	if sent := entriesOfKind(t, f.ledger, kindPacketSent); len(sent) != 0 {
		t.Errorf("%d refused packets recorded as sent", len(sent))
	}
	all, _ := f.ledger.Entries(ctx, custody.Query{})
	for _, e := range all {
		if strings.Contains(string(e.Body), "hunter2") {
			t.Errorf("ledger entry %d copies the refused packet's extra field", e.Seq)
		}
	}
}

func TestSendAcceptsTestFixtureOnlyInTestMode(t *testing.T) {
	f := newWireFixture(t)
	packet := marshal(t, build(t, f.room, BuildOptions{Job: "rank_assumptions", Focus: "claim-core", TestFixture: true}))
	if _, err := f.wire.Send(context.Background(), packet); kindOf(err) != custody.EDENIED {
		t.Fatalf("test_fixture outside test mode: %v", err)
	}
	f.wire.AllowTestFixture = true
	if a, err := f.wire.Send(context.Background(), packet); err != nil || !a.Answered() {
		t.Fatalf("test_fixture in test mode: %+v, %v", a, err)
	}
}

func TestSendSoftFailuresStoreNothing(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		brain  func(t *testing.T) Dialer
		reason string
		event  string
	}{
		{"Unreachable", func(t *testing.T) Dialer {
			return func() (mcp.Transport, error) {
				return &mcp.CommandTransport{Command: exec.Command(t.TempDir() + "/no-such-brain")}, nil
			}
		}, ReasonUnreachable, ""},
		{"UnreachableHTTP", func(t *testing.T) Dialer {
			return func() (mcp.Transport, error) {
				return &mcp.StreamableClientTransport{Endpoint: "http://127.0.0.1:1/mcp", MaxRetries: -1}, nil
			}
		}, ReasonUnreachable, ""},
		{"ToolAbsent", func(t *testing.T) Dialer {
			return memoryBrain(t, rawBrain("other_tool", `{}`))
		}, ReasonToolAbsent, ""},
		{"ResponseExtraField", func(t *testing.T) Dialer {
			return memoryBrain(t, rawBrain(toolName, `{"job_id":"suggest_next_move","suggestions":[{"summary":"x","transcript":"leak"}]}`))
		}, ReasonResponseSchema, eventResponseRejected},
		{"ResponseNotJSON", func(t *testing.T) Dialer {
			return memoryBrain(t, rawBrain(toolName, `I think you should raise prices.`))
		}, ReasonResponseSchema, eventResponseRejected},
		{"ResponseWrongType", func(t *testing.T) Dialer {
			return memoryBrain(t, rawBrain(toolName, `{"suggestions":[{"confidence":"high"}]}`))
		}, ReasonResponseSchema, eventResponseRejected},
		{"ResponseOtherJob", func(t *testing.T) Dialer {
			return memoryBrain(t, rawBrain(toolName, `{"job_id":"opportunity_rank","suggestions":[]}`))
		}, ReasonResponseSchema, eventResponseRejected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newWireFixture(t)
			f.wire.Brain = tt.brain(t)
			nodes, edges, _, _ := f.room.Counts(ctx)
			a, err := f.wire.Send(ctx, f.packet(t, "suggest_next_move"))
			if err != nil || a.Reason != tt.reason || a.Response != nil {
				t.Fatalf("Send = %+v, %v; want reason %s", a, err, tt.reason)
			}
			n2, e2, _, _ := f.room.Counts(ctx)
			if n2 != nodes || e2 != edges || nodesOfType(t, f.room, "brain_insight") != 0 {
				t.Errorf("room changed: nodes %d->%d edges %d->%d", nodes, n2, edges, e2)
			}
			if tt.event != "" {
				if evs, _ := f.room.EventsOfType(ctx, tt.event); len(evs) != 1 {
					t.Errorf("%d %s events, want 1", len(evs), tt.event)
				}
				if got := entriesOfKind(t, f.ledger, kindReplyRejected); len(got) != 1 {
					t.Errorf("%d rejected replies on the ledger, want 1", len(got))
				}
			}
			if got := entriesOfKind(t, f.ledger, kindReplyReceived); len(got) != 0 {
				t.Errorf("an invalid reply was recorded as received")
			}
		})
	}
}

func TestSendFailsClosedWithoutLedger(t *testing.T) {
	f := newWireFixture(t)
	f.wire.Ledger = nil
	if _, err := f.wire.Send(context.Background(), f.packet(t, "suggest_next_move")); kindOf(err) != custody.EUNAVAILABLE {
		t.Fatalf("err = %v, want unavailable", err)
	}
	if f.brain.n.Load() != 0 {
		t.Fatal("a packet went out without a ledger")
	}
}

// stdioBrain spawns this test binary as a stdio Brain (see TestMain).
func stdioBrain(t testing.TB) Dialer {
	return func() (mcp.Transport, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "CUSTODY_BRAIN_TEST_SERVE=stdio")
		return &mcp.CommandTransport{Command: cmd}, nil
	}
}

func TestSendOverStdio(t *testing.T) {
	f := newWireFixture(t)
	f.wire.Brain = stdioBrain(t)
	a, err := f.wire.Send(context.Background(), f.packet(t, "detect_contradiction"))
	if err != nil || !a.Answered() {
		t.Fatalf("Send = %+v, %v", a, err)
	}
	if s := a.Response.Suggestions[0]; !strings.Contains(s.Summary, "claim-sms") {
		t.Errorf("contradiction not surfaced: %+v", s)
	}
}
