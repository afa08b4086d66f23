package gate_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/example"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/internal/gatetest"
	"github.com/custody-dev/custody/internal/testclock"
	"github.com/custody-dev/custody/store/sqlite"
)

type harness struct {
	db   *sqlite.DB
	led  *gatetest.FlakyLedger
	reg  *contract.Registry
	svc  *approval.Service
	gw   *gate.Gateway
	clk  *testclock.Clock
	runs map[string]*atomic.Int64
	// stuckAnswers counts the runs of the stuck tool that have answered,
	// long after the gateway gave up on them.
	stuckAnswers atomic.Int64
}

// runDeadline bounds the runs of the tools whose point is the deadline,
// slow and stuck. Every other tool has the gateway's default, which no
// loaded machine comes near.
const runDeadline = 200 * time.Millisecond

const testContract = "https://custody.dev/schemas/gate-test/v1"

func loadRegistry(t testing.TB) *contract.Registry {
	t.Helper()
	raw, err := os.ReadFile("testdata/tools.json")
	if err != nil {
		t.Fatal(err)
	}
	name, ex := example.Contract()
	reg, err := contract.Load(contract.Options{Contracts: []contract.Source{gate.EnvelopeContract()}, Extra: map[string][]byte{"gate-test.json": raw, name: ex}})
	if err != nil {
		t.Fatalf("load contracts: %v", err)
	}
	return reg
}

func newHarness(t testing.TB, notifiers ...approval.Notifier) *harness {
	t.Helper()
	return newHarnessIn(t, t.TempDir(), notifiers...)
}

// newHarnessIn is newHarness with its store in dir.
func newHarnessIn(t testing.TB, dir string, notifiers ...approval.Notifier) *harness {
	t.Helper()
	return newHarnessWith(t, harnessOptions{dir: dir, notifiers: notifiers})
}

// harnessOptions say how newHarnessWith builds a harness.
type harnessOptions struct {
	dir       string
	notifiers []approval.Notifier
	// deadline bounds each handler run; gate.DefaultDeadline when zero.
	deadline time.Duration
	// stoppedStore gives the store the harness's clock, which moves only
	// when the test moves it, instead of the wall clock.
	stoppedStore bool
	// tracer, when set, traces every call.
	tracer trace.Tracer
	// allowed is the gateway's Config.Allowed.
	allowed func(actor, tool string) bool
}

// newHarnessWith builds a harness as opts say.
func newHarnessWith(t testing.TB, opts harnessOptions) *harness {
	t.Helper()
	clk := testclock.New(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	var sopts sqlite.Options
	if opts.stoppedStore {
		sopts.Now = clk.Now
	}
	db, err := sqlite.Open(context.Background(), opts.dir, sopts)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	h := &harness{db: db, led: &gatetest.FlakyLedger{Ledger: db}, reg: loadRegistry(t),
		clk: clk, runs: map[string]*atomic.Int64{}}
	// The gateway checks what an operator approves; it is built after
	// the service, as in serve.
	validate := func(ctx context.Context, a custody.Approval) error { return h.gw.CheckApproval(ctx, a) }
	h.svc, err = approval.New(approval.Config{Store: db, Ledger: h.led, Notifiers: opts.notifiers, Now: h.clk.Now, Validate: validate})
	if err != nil {
		t.Fatal(err)
	}
	tools := append(example.Tools(db, h.clk.Now), h.testTools()...)
	for i := range tools {
		tools[i].Handler = h.counted(tools[i].Spec.Name, tools[i].Handler)
	}
	h.gw, err = gate.New(gate.Config{
		Registry: h.reg, Ledger: h.led, Approvals: h.svc, State: db, Now: h.clk.Now,
		Deadline: opts.deadline, Logger: discard(), Tracer: opts.tracer,
		Allowed: opts.allowed,
	}, example.EnvelopeID, tools)
	if err != nil {
		t.Fatalf("new gateway: %v", err)
	}
	return h
}

// counted counts the runs of a handler.
func (h *harness) counted(name string, next gate.Handler) gate.Handler {
	n := &atomic.Int64{}
	h.runs[name] = n
	return func(ctx context.Context, c custody.Call) (json.RawMessage, error) {
		n.Add(1)
		return next(ctx, c)
	}
}

func (h *harness) ran(name string) int64 { return h.runs[name].Load() }

func spec(name string, access custody.Access) custody.ToolSpec {
	effect := custody.EffectNone
	if access == custody.Write {
		effect = custody.EffectReversible
	}
	return custody.ToolSpec{Name: name, Description: "test tool " + name,
		Input: testContract + "#/$defs/args", Output: testContract + "#/$defs/result",
		Access: access, Effect: effect, Approval: custody.NotRequired}
}

func ok(context.Context, custody.Call) (json.RawMessage, error) {
	return json.RawMessage(`{"ok":true}`), nil
}

// testTools are purpose-built tools, one per policy the gateway enforces.
func (h *harness) testTools() []gate.Tool {
	limited := spec("limited", custody.Read)
	limited.MaxCallsPerTrace = 2
	chart := spec("chart", custody.Read)
	chart.Scope = "trace:/patient_id"
	brief := spec("make_brief", custody.Read)
	brief.Refs = map[string]string{"brief_id": "/brief_id"}
	fake := spec("fake_brief", custody.Read)
	fake.Refs = map[string]string{"brief_id": "/brief_id"}
	cite := spec("cite_brief", custody.Write)
	cite.Links = []custody.Link{{Arg: "/brief_id", Tool: "make_brief", Ref: "brief_id"}}
	sign := spec("sign", custody.Write)
	sign.Effect, sign.Approval = custody.EffectConsequential, custody.HumanConfirmation
	sign.Links = []custody.Link{{Arg: "/approval_request_id", Approval: true}}
	once := spec("sign_once", custody.Write)
	once.Effect, once.Approval, once.MaxCallsPerTrace = custody.EffectConsequential, custody.HumanConfirmation, 1
	once.Links = []custody.Link{{Arg: "/approval_request_id", Approval: true}}
	probed := spec("probed", custody.Read)
	probed.MaxRefusalsPerTrace = 3
	broadcast := spec("broadcast", custody.Write)
	broadcast.Input, broadcast.ArgumentsPolicy = testContract+"#/$defs/broadcast_args", testContract+"#/$defs/broadcast_policy"
	broadcast.Effect, broadcast.Approval = custody.EffectConsequential, custody.HumanConfirmation
	broadcast.Links = []custody.Link{{Arg: "/approval_request_id", Approval: true}}
	briefOut := func(_ context.Context, c custody.Call) (json.RawMessage, error) {
		var in struct{ S string }
		_ = json.Unmarshal(c.Args, &in)
		return json.Marshal(map[string]any{"ok": true, "brief_id": "B-" + in.S})
	}
	return []gate.Tool{
		{Spec: spec("echo", custody.Read), Handler: ok},
		{Spec: spec("store", custody.Write), Handler: h.intentOnLedger},
		{Spec: spec("put", custody.Write), Handler: ok},
		{Spec: limited, Handler: ok},
		{Spec: chart, Handler: ok},
		{Spec: brief, Handler: briefOut},
		{Spec: fake, Handler: briefOut},
		{Spec: cite, Handler: ok},
		{Spec: sign, Handler: ok, Editable: []string{"message"}},
		{Spec: broadcast, Handler: ok, Editable: []string{"message", "tier"}},
		{Spec: once, Handler: ok},
		{Spec: probed, Handler: ok},
		{Spec: spec("broken", custody.Read), Handler: func(context.Context, custody.Call) (json.RawMessage, error) {
			return json.RawMessage(`{"ok":"yes","secret":"do not show"}`), nil
		}},
		{Spec: spec("failing", custody.Write), Handler: func(context.Context, custody.Call) (json.RawMessage, error) {
			return nil, errors.New("disk on fire at /var/lib/x")
		}},
		{Spec: spec("slow", custody.Read), Deadline: runDeadline, Handler: func(ctx context.Context, _ custody.Call) (json.RawMessage, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}},
		{Spec: spec("stuck", custody.Read), Deadline: runDeadline, Handler: func(context.Context, custody.Call) (json.RawMessage, error) {
			time.Sleep(time.Second)
			defer h.stuckAnswers.Add(1)
			return json.RawMessage(`{"ok":true}`), nil
		}},
	}
}

// intentOnLedger succeeds only if the call's call.started entry, with the
// exact argument bytes, is already on the ledger.
func (h *harness) intentOnLedger(ctx context.Context, c custody.Call) (json.RawMessage, error) {
	es, err := h.db.Entries(ctx, custody.Query{Trace: c.Trace, Kind: custody.KindCallStarted})
	if err != nil || len(es) == 0 {
		return nil, errors.New("no intent entry before the side effect")
	}
	if got := bodyArgs(es[len(es)-1]); string(got) != string(c.Args) {
		return nil, errors.New("the intent entry holds other arguments")
	}
	return json.RawMessage(`{"ok":true}`), nil
}

func (h *harness) call(trace, tool, args string) (custody.Result, error) {
	return h.gw.Call(context.Background(), custody.Call{Trace: trace, Tool: tool, Args: json.RawMessage(args), Actor: "agent-1", Via: "test"})
}

func (h *harness) entries(t testing.TB, q custody.Query) []custody.Entry {
	t.Helper()
	es, err := h.db.Entries(context.Background(), q)
	if err != nil {
		t.Fatalf("entries: %v", err)
	}
	return es
}

// entry returns the entry at seq.
func (h *harness) entry(t testing.TB, seq int64) custody.Entry {
	t.Helper()
	es := h.entries(t, custody.Query{After: seq - 1, Limit: 1})
	if len(es) != 1 || es[0].Seq != seq {
		t.Fatalf("no entry at seq %d", seq)
	}
	return es[0]
}

func (h *harness) verify(t testing.TB) {
	t.Helper()
	if _, err := h.db.Verify(context.Background()); err != nil {
		t.Fatalf("chain does not verify: %v", err)
	}
}

// bodyArgs returns the exact bytes of the "arguments" member of a body.
func bodyArgs(e custody.Entry) json.RawMessage {
	var b struct {
		Arguments json.RawMessage `json:"arguments"`
	}
	_ = json.Unmarshal(e.Body, &b)
	return b.Arguments
}

// bodyError returns the "error" member of a body.
func bodyError(e custody.Entry) (kind string, violations []custody.Violation) {
	var b struct {
		Error struct {
			Kind       string              `json:"kind"`
			Violations []custody.Violation `json:"violations"`
		} `json:"error"`
	}
	_ = json.Unmarshal(e.Body, &b)
	return b.Error.Kind, b.Error.Violations
}

// wantRefused checks that err is of kind and carries the receipt of the
// one call.refused entry recording it.
func (h *harness) wantRefused(t testing.TB, err error, kind string) custody.Entry {
	t.Helper()
	return h.wantOutcome(t, err, kind, custody.KindCallRefused)
}

func (h *harness) wantOutcome(t testing.TB, err error, kind, entryKind string) custody.Entry {
	t.Helper()
	var ce *custody.Error
	if !errors.As(err, &ce) {
		t.Fatalf("error = %v, want a *custody.Error of kind %q", err, kind)
	}
	if ce.Kind != kind {
		t.Fatalf("error kind = %q (%s), want %q", ce.Kind, ce.Message, kind)
	}
	if ce.Receipt == nil {
		t.Fatalf("error has no receipt")
	}
	e := h.entry(t, ce.Receipt.Seq)
	if e.Kind != entryKind || e.Hash != ce.Receipt.Hash {
		t.Fatalf("receipt names %s entry %d (%s), want %s", e.Kind, e.Seq, e.Hash, entryKind)
	}
	if got, _ := bodyError(e); got != kind {
		t.Errorf("recorded error kind = %q, want %q", got, kind)
	}
	return e
}

func wantKind(t testing.TB, err error, kind string) *custody.Error {
	t.Helper()
	var ce *custody.Error
	if !errors.As(err, &ce) || ce.Kind != kind {
		t.Fatalf("error = %v, want kind %q", err, kind)
	}
	return ce
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
