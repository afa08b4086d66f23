package otelspan_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"regexp"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/internal/otlptest"
	"github.com/custody-dev/custody/store/sqlite"
	"github.com/custody-dev/custody/systems/peas"
	"github.com/custody-dev/custody/systems/peas/otelspan"
)

// stack is the pile-up chain on a real gateway, SQLite store and approval
// service.
type stack struct {
	db        *sqlite.DB
	approvals *approval.Service
	gw        *gate.Gateway
	sys       *peas.System
}

func newStack(t *testing.T, tr peas.Tracer) *stack {
	t.Helper()
	now := func() time.Time { return time.Date(2026, 1, 9, 14, 0, 0, 0, time.UTC) }
	db, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	reg, err := contract.Load(contract.Options{Contracts: []contract.Source{peas.Contract()}})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := approval.New(approval.Config{Store: db, Ledger: db, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	sys := peas.New(peas.Deps{Approvals: svc, State: db, Ledger: db, Schemas: reg, Tracer: tr, Now: now,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	gw, err := gate.New(gate.Config{Registry: reg, Ledger: db, Approvals: svc, State: db, Now: now},
		"peas", sys.Tools())
	if err != nil {
		t.Fatal(err)
	}
	return &stack{db: db, approvals: svc, gw: gw, sys: sys}
}

const (
	location = "I-94:MM88-EB"
	whiteout = `{"crash_density_per_min":1.4,"visibility_ft":150,"ambient_temp_f":24,"precipitation_type":"snow","traffic_speed_mph":55,"wind_mph":38}`
	calm     = `{"crash_density_per_min":0,"visibility_ft":10560,"ambient_temp_f":58,"precipitation_type":"none","traffic_speed_mph":68}`
)

// run runs the whiteout chain to its end with the operator approving, and
// returns it with compose_ops_brief's output as the gateway returned it.
func (s *stack) run(t *testing.T) (*peas.Chain, json.RawMessage) {
	t.Helper()
	ctx := context.Background()
	ch, err := s.sys.Start(ctx, s.gw, location, json.RawMessage(whiteout))
	if err != nil || ch.Stage != peas.StagePending {
		t.Fatalf("chain stage %q: %v", ch.Stage, err)
	}
	if _, err := s.approvals.Decide(ctx, ch.ApprovalID, approval.Decision{Decision: approval.Approve, Operator: "op-1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.sys.Continue(ctx, s.gw, ch); err != nil || ch.Stage != peas.StageNotified {
		t.Fatalf("chain stage %q after approval: %v", ch.Stage, err)
	}
	return ch, briefOutput(t, ch)
}

func briefOutput(t *testing.T, ch *peas.Chain) json.RawMessage {
	t.Helper()
	for _, o := range ch.Transcript.Outcomes {
		if o.Call.Name == peas.ToolBrief && o.Err == nil {
			return o.Output
		}
	}
	t.Fatal("no compose_ops_brief output in the transcript")
	return nil
}

// hops counts the chain's successful calls of each tool.
func hops(ch *peas.Chain) map[string]int {
	n := map[string]int{}
	for _, o := range ch.Transcript.Outcomes {
		if o.Err == nil {
			n["peas."+o.Call.Name]++
		}
	}
	return n
}

func attr(sp *tracepb.Span, key string) string { return otlptest.Attr(sp, key) }

var (
	traceIDRe = regexp.MustCompile(`^[0-9a-f]{32}$`)
	spanIDRe  = regexp.MustCompile(`^[0-9a-f]{16}$`)
)

// checkSpans asserts that spans are one prediction root and one span per
// hop under it, all in the brief's trace, and that the brief's span id is
// its hop's.
func checkSpans(t *testing.T, spans []*tracepb.Span, ch *peas.Chain, brief peas.BriefOutput) {
	t.Helper()
	if brief.TraceID == nil || brief.SpanID == nil || !traceIDRe.MatchString(*brief.TraceID) || !spanIDRe.MatchString(*brief.SpanID) {
		t.Fatalf("brief prediction ids %v %v, want 32 and 16 hex digits", brief.TraceID, brief.SpanID)
	}
	var roots []*tracepb.Span
	got := map[string]int{}
	var briefSpan *tracepb.Span
	for _, sp := range spans {
		if tid := hex.EncodeToString(sp.GetTraceId()); tid != *brief.TraceID {
			t.Errorf("span %s in trace %s, want the brief's %s", sp.GetName(), tid, *brief.TraceID)
		}
		if c := attr(sp, otelspan.AttrChain); c != ch.Trace {
			t.Errorf("span %s %s = %q, want %q", sp.GetName(), otelspan.AttrChain, c, ch.Trace)
		}
		if sp.GetName() == otelspan.RootSpan {
			roots = append(roots, sp)
			continue
		}
		got[sp.GetName()]++
		if sp.GetName() == "peas."+peas.ToolBrief {
			briefSpan = sp
		}
	}
	if len(roots) != 1 || len(roots[0].GetParentSpanId()) != 0 {
		t.Fatalf("%d prediction roots %v, want one without a parent", len(roots), roots)
	}
	rootID := roots[0].GetSpanId()
	for _, sp := range spans {
		if sp != roots[0] && !bytes.Equal(sp.GetParentSpanId(), rootID) {
			t.Errorf("span %s has parent %x, want the root %x", sp.GetName(), sp.GetParentSpanId(), rootID)
		}
	}
	want := hops(ch)
	if len(got) != len(want) {
		t.Errorf("hop spans %v, want one per hop %v", got, want)
	}
	for name, n := range want {
		if got[name] != n {
			t.Errorf("%d %s spans, want %d (all: %v)", got[name], name, n, got)
		}
	}
	if briefSpan == nil || hex.EncodeToString(briefSpan.GetSpanId()) != *brief.SpanID {
		t.Errorf("brief's span id %s is not the compose_ops_brief span's", *brief.SpanID)
	}
}

// TestChainSpans: with an explicit endpoint every hop of a chain arrives
// at the OTLP receiver as a span under one prediction root, in the trace
// the brief reports.
func TestChainSpans(t *testing.T) {
	rcv := otlptest.New(t)
	ctx := context.Background()
	tr, shutdown, err := otelspan.NewTracer(ctx, rcv.URL)
	if err != nil || tr == nil {
		t.Fatalf("NewTracer(%s) = %v, %v", rcv.URL, tr, err)
	}
	s := newStack(t, tr)
	ch, raw := s.run(t)
	if err := shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	var brief peas.BriefOutput
	if err := json.Unmarshal(raw, &brief); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Spans()
	want := hops(ch)
	for _, tool := range []string{peas.ToolDetect, peas.ToolBrief, peas.ToolApprove, peas.ToolVMS, peas.ToolNotify} {
		if want["peas."+tool] == 0 {
			t.Fatalf("chain made no %s call: %v", tool, want)
		}
	}
	checkSpans(t, spans, ch, brief)
}

// TestEnvEndpoint: OTEL_EXPORTER_OTLP_ENDPOINT turns tracing on.
func TestEnvEndpoint(t *testing.T) {
	rcv := otlptest.New(t)
	t.Setenv(otelspan.EnvTracesEndpoint, "")
	t.Setenv(otelspan.EnvEndpoint, rcv.URL)
	ctx := context.Background()
	tr, shutdown, err := otelspan.NewTracer(ctx, "")
	if err != nil || tr == nil {
		t.Fatalf("NewTracer from the environment = %v, %v", tr, err)
	}
	s := newStack(t, tr)
	ch, err := s.sys.Start(ctx, s.gw, location, json.RawMessage(calm))
	if err != nil || ch.Stage != peas.StageWatch {
		t.Fatalf("calm chain stage %q: %v", ch.Stage, err)
	}
	if err := shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	names := map[string]int{}
	for _, sp := range rcv.Spans() {
		names[sp.GetName()]++
	}
	if names[otelspan.RootSpan] != 1 || names["peas."+peas.ToolDetect] != 1 || len(names) != 2 {
		t.Fatalf("spans %v, want the root and one detect hop", names)
	}
}

// TestChainEndsRoot: the root span ends when the chain is over (watch,
// declined), not while it waits for its approval.
func TestChainEndsRoot(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name     string
		readings string
		decide   string
		stage    string
		ended    bool
	}{
		{"Watch", calm, "", peas.StageWatch, true},
		{"Pending", whiteout, "", peas.StagePending, false},
		{"Declined", whiteout, approval.Decline, peas.StageDeclined, true},
		{"Notified", whiteout, approval.Approve, peas.StageNotified, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
			defer tp.Shutdown(ctx)
			s := newStack(t, otelspan.New(tp))
			ch, err := s.sys.Start(ctx, s.gw, location, json.RawMessage(tt.readings))
			if err != nil {
				t.Fatal(err)
			}
			if tt.decide != "" {
				if _, err := s.approvals.Decide(ctx, ch.ApprovalID, approval.Decision{Decision: tt.decide, Operator: "op-1"}); err != nil {
					t.Fatal(err)
				}
				if err := s.sys.Continue(ctx, s.gw, ch); err != nil {
					t.Fatal(err)
				}
			}
			if ch.Stage != tt.stage {
				t.Fatalf("chain stage %q, want %q", ch.Stage, tt.stage)
			}
			roots := 0
			for _, sp := range exp.GetSpans() {
				if sp.Name == otelspan.RootSpan {
					roots++
				}
			}
			if (roots == 1) != tt.ended || roots > 1 {
				t.Fatalf("%d ended roots, want ended %v", roots, tt.ended)
			}
		})
	}
}

// TestNoEndpoint: without an endpoint tracing is off and the brief's
// prediction ids are null.
func TestNoEndpoint(t *testing.T) {
	t.Setenv(otelspan.EnvTracesEndpoint, "")
	t.Setenv(otelspan.EnvEndpoint, "")
	ctx := context.Background()
	tr, shutdown, err := otelspan.NewTracer(ctx, "")
	if err != nil || tr != nil {
		t.Fatalf("NewTracer without an endpoint = %v, %v; want nil", tr, err)
	}
	if err := shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	s := newStack(t, peas.TracerOf(tr))
	ch, err := s.sys.Start(ctx, s.gw, location, json.RawMessage(whiteout))
	if err != nil || ch.Stage != peas.StagePending {
		t.Fatalf("chain stage %q: %v", ch.Stage, err)
	}
	var out map[string]any
	if err := json.Unmarshal(briefOutput(t, ch), &out); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"prediction_trace_id", "prediction_span_id"} {
		v, ok := out[k]
		if !ok || v != nil {
			t.Errorf("%s = %v (present %v), want null", k, v, ok)
		}
	}
}

// TestRoots: hops of one chain share its root; End, the idle timeout and
// Close end roots; a hop outside any chain has a root of its own.
func TestRoots(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	now := time.Date(2026, 1, 9, 14, 0, 0, 0, time.UTC)
	tr := otelspan.New(tp, otelspan.WithIdle(time.Minute), otelspan.WithClock(func() time.Time { return now }))
	ctx := context.Background()
	hop := func(chain string) string {
		_, tid, sid, end := tr.Start(ctx, chain, "peas.hop")
		end()
		if !traceIDRe.MatchString(tid) || !spanIDRe.MatchString(sid) {
			t.Fatalf("ids %q %q", tid, sid)
		}
		return tid
	}
	ended := func() map[string]int {
		n := map[string]int{}
		for _, sp := range exp.GetSpans() {
			if sp.Name == otelspan.RootSpan {
				n[sp.SpanContext.TraceID().String()]++
			}
		}
		return n
	}
	a, a2, b := hop("a"), hop("a"), hop("b")
	if a != a2 || a == b {
		t.Fatalf("traces a %s, %s, b %s: want one per chain", a, a2, b)
	}
	if len(ended()) != 0 {
		t.Fatalf("roots ended before their chains: %v", ended())
	}
	tr.End("a")
	if e := ended(); e[a] != 1 || e[b] != 0 {
		t.Fatalf("after End(a) ended roots %v", e)
	}
	if hop("a") == a {
		t.Fatal("a hop after End(a) joined the ended root")
	}
	now = now.Add(2 * time.Minute)
	c := hop("c")
	if e := ended(); e[b] != 1 || e[c] != 0 {
		t.Fatalf("after the idle timeout ended roots %v, want b's", e)
	}
	if x, y := hop(""), hop(""); x == y || ended()[x] != 1 {
		t.Fatalf("hops outside a chain share trace %s or left their root open", x)
	}
	tr.Close()
	if e := ended(); e[c] != 1 {
		t.Fatalf("after Close ended roots %v, want c's", e)
	}
}
