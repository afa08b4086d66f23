package peas

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/systems"
	"github.com/custody-dev/custody/systems/llm"
	"github.com/custody-dev/custody/systems/peas/otelspan"
)

// demoOperator is the scripted operator of the demo.
const demoOperator = "demo-operator"

// demoMessage is the sign message the scripted operator edits in.
const demoMessage = "WHITEOUT. PILE-UP AHEAD. SLOW DOWN NOW"

// flushTimeout bounds flushing the chain's spans when the demo ends.
const flushTimeout = 5 * time.Second

// runDemo runs the pile-up chain in-process on the whiteout
// reconstruction with a scripted operator and prints its chain of custody
// and the ledger verification. It exits 0 only when every link holds, a
// replayed approval is refused and the ledger verifies. With an OTLP
// endpoint (--otlp, or the OTEL_EXPORTER_OTLP_* variables) each hop is a
// span exported there and the brief carries the prediction's ids.
func runDemo(ctx context.Context, env systems.Env, args []string) int {
	fs := env.Flags("demo peas", "[--data DIR] [--llm URL] [--llm-edge URL] [--otlp URL]")
	data := fs.String("data", "", "data `DIR` (default: a temporary directory, removed afterwards)")
	llmURL := fs.String("llm", env.Setting("CUSTODY_LLM", "template"), "tool-calling backend `URL`: template, ollama://HOST:PORT/MODEL, openai://HOST:PORT/v1/MODEL")
	edgeURL := fs.String("llm-edge", env.Setting("CUSTODY_LLM_EDGE", ""), "edge text backend `URL` for language hops")
	otlpURL := fs.String("otlp", "", "OTLP/HTTP `URL` to export the chain's spans to, e.g. http://localhost:4318 (default: "+
		otelspan.EnvTracesEndpoint+" or "+otelspan.EnvEndpoint+"; none: tracing off)")
	contracts := env.ContractsFlag(fs)
	if ok, code := env.Parse(fs, args); !ok {
		return code
	}
	router, err := llm.NewRouter(*llmURL, *edgeURL)
	if err != nil {
		return env.Host.Fail(err)
	}
	dir, cleanup, err := demoDir(*data)
	if err != nil {
		return env.Host.Fail(err)
	}
	defer cleanup()
	tracer, shutdown, err := otelspan.NewTracer(ctx, *otlpURL, otelspan.WithGetenv(env.Getenv))
	if err != nil {
		return env.Host.Fail(&custody.Error{Kind: custody.EINVALID, Message: "--otlp: " + err.Error(), Err: err})
	}
	defer flushSpans(env.Stderr, shutdown)
	d, err := openDemo(ctx, env, dir, *contracts, router, TracerOf(tracer))
	if err != nil {
		return env.Host.Fail(err)
	}
	defer d.st.Close()
	if err := d.chain(ctx); err != nil {
		fmt.Fprintf(env.Stdout, "FAILED: %v\n", custody.ErrorMessage(err))
		return env.Host.Fail(err)
	}
	return systems.ExitOK
}

// demoDir returns the data directory and how to clean it up.
func demoDir(data string) (string, func(), error) {
	if data != "" {
		return data, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "custody-demo-peas-")
	if err != nil {
		return "", nil, fmt.Errorf("create demo data directory: %w", err)
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// flushSpans flushes the chain's spans to the OTLP endpoint. A collector
// that cannot be reached is reported on stderr, not fatal: the chain of
// custody is on the ledger either way.
func flushSpans(stderr io.Writer, shutdown func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	if err := shutdown(ctx); err != nil {
		fmt.Fprintf(stderr, "custody: warning: %v\n", err)
	}
}

// demo is one run of the demo: the stack, the system attached to it, and
// where it prints.
type demo struct {
	out io.Writer
	st  *systems.Stack
	sys *System
}

// openDemo opens the core stack with the pile-up tools and attaches the
// system to its stores. A nil tracer leaves tracing off.
func openDemo(ctx context.Context, env systems.Env, dir, contracts string, router llm.Router, tracer Tracer) (*demo, error) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	sys := New(Deps{LLM: router, Logger: quiet, Tracer: tracer})
	st, err := env.Host.Open(ctx, systems.Open{Data: dir, Contracts: contracts, Tools: sys.Tools(), Scratch: true}) // a scratch run, never a shared store
	if err != nil {
		return nil, err
	}
	sys.Attach(st.Approvals, st.Store, st.Store, st.Registry)
	return &demo{out: env.Stdout, st: st, sys: sys}, nil
}

// chain runs the chain, plays the operator and checks every link.
func (d *demo) chain(ctx context.Context) error {
	c := DefaultCorridors()[0]
	ws := Scenario(c.Scenario)
	w := ws[len(ws)-1]
	fmt.Fprintf(d.out, "corridor   %s (%s), window at minute %d\n", c.LocationID, c.Name, w.Minute)
	ch, err := d.sys.Start(ctx, d.st.Gateway, c.LocationID, w.Readings)
	if err != nil {
		return err
	}
	if ch.Stage != StagePending {
		return fmt.Errorf("chain stopped at %q before the approval: %s", ch.Stage, ch.Final)
	}
	fmt.Fprintf(d.out, "signature  %s  severity %s\nbrief      %s\napproval   %s  pending for %s\n",
		ch.SignatureID, ch.Severity, ch.BriefID, ch.ApprovalID, DefaultOperator)
	if tid, sid := predictionIDs(ch); tid != "" {
		fmt.Fprintf(d.out, "otel       trace %s  brief span %s\n", tid, sid)
	}
	if err := d.operator(ctx, ch.ApprovalID); err != nil {
		return err
	}
	if err := d.sys.Continue(ctx, d.st.Gateway, ch); err != nil {
		return err
	}
	if ch.Stage != StageNotified {
		return fmt.Errorf("chain stopped at %q after the approval: %s", ch.Stage, ch.Final)
	}
	shown, err := d.signShows(ctx, c.Billboard)
	if err != nil {
		return err
	}
	if shown != demoMessage {
		return fmt.Errorf("sign %s shows %q, not the approved %q", c.Billboard, shown, demoMessage)
	}
	fmt.Fprintf(d.out, "vms update %s  sign %s shows %q\n", ch.VMSUpdateID, c.Billboard, shown)
	for _, id := range ch.NotificationIDs {
		fmt.Fprintf(d.out, "notified   %s\n", id)
	}
	if err := d.replay(ctx, ch); err != nil {
		return err
	}
	return d.verify(ctx, ch)
}

// predictionIDs returns the OpenTelemetry ids compose_ops_brief reported,
// "" when tracing is off.
func predictionIDs(ch *Chain) (traceID, spanID string) {
	for _, o := range ch.Transcript.Outcomes {
		if o.Call.Name != ToolBrief || o.Err != nil {
			continue
		}
		var b BriefOutput
		if json.Unmarshal(o.Output, &b) == nil && b.TraceID != nil && b.SpanID != nil {
			return *b.TraceID, *b.SpanID
		}
	}
	return "", ""
}

// signShows returns what a sign of the registry shows.
func (d *demo) signShows(ctx context.Context, billboard string) (string, error) {
	signs, err := d.sys.Signs(ctx)
	if err != nil {
		return "", err
	}
	for _, sg := range signs {
		if sg.BillboardID == billboard && sg.State == SignPosted {
			return sg.Message, nil
		}
	}
	return "", fmt.Errorf("sign %s shows nothing", billboard)
}

// operator edits the sign message, chooses the urgent voice and
// approves, as an operator in the console would.
func (d *demo) operator(ctx context.Context, id string) error {
	a, err := d.st.Approvals.Get(ctx, id)
	if err != nil {
		return err
	}
	var act VMSAction
	if err := json.Unmarshal(a.Arguments, &act); err != nil {
		return fmt.Errorf("read proposed sign update: %w", err)
	}
	fmt.Fprintf(d.out, "operator   %s edits %q to %q, chooses the urgent voice and approves\n", demoOperator, act.Message, demoMessage)
	act.Message = demoMessage
	edited, err := json.Marshal(act)
	if err != nil {
		return fmt.Errorf("encode edited sign update: %w", err)
	}
	if err := d.sys.ChooseVoice(ctx, id, VoiceUrgent, demoOperator); err != nil {
		return err
	}
	_, err = d.st.Approvals.Decide(ctx, id, approval.Decision{Decision: approval.Approve, Operator: demoOperator, Arguments: edited})
	return err
}

// replay posts the sign again with the used approval: the gateway must
// refuse it.
func (d *demo) replay(ctx context.Context, ch *Chain) error {
	a, err := d.st.Approvals.Get(ctx, ch.ApprovalID)
	if err != nil {
		return err
	}
	var act VMSAction
	if err := json.Unmarshal(a.Arguments, &act); err != nil {
		return fmt.Errorf("read approved sign update: %w", err)
	}
	args, _ := json.Marshal(VMSInput{ApprovalRequestID: a.ID, BillboardID: act.BillboardID, Message: act.Message, DurationS: act.DurationS})
	_, err = d.st.Gateway.Call(ctx, custody.Call{Trace: ch.Trace, Tool: ToolVMS, Args: args, Actor: "demo", Via: "cli"})
	e := custody.AsError(err)
	if err == nil || e.Receipt == nil {
		return errors.New("a replayed approval was not refused on the ledger")
	}
	fmt.Fprintf(d.out, "replay     refused (%s) at ledger seq %d\n", e.Kind, e.Receipt.Seq)
	return nil
}

// verify checks that each id of the chain is on the ledger in the
// chain's trace, then seals the ledger and verifies it whole.
func (d *demo) verify(ctx context.Context, ch *Chain) error {
	refs := [][2]string{{"signature_id", ch.SignatureID}, {"brief_id", ch.BriefID}, {"approval_request_id", ch.ApprovalID},
		{"vms_update_id", ch.VMSUpdateID}}
	for _, id := range ch.NotificationIDs {
		refs = append(refs, [2]string{"notification_id", id})
	}
	for _, r := range refs {
		es, err := d.st.Store.Entries(ctx, custody.Query{Trace: ch.Trace, Kind: custody.KindCallSucceeded, Refs: map[string]string{r[0]: r[1]}})
		if err != nil {
			return err
		}
		if len(es) == 0 {
			return fmt.Errorf("%s %s is not on the ledger in trace %s", r[0], r[1], ch.Trace)
		}
	}
	fmt.Fprintf(d.out, "chain      signature → brief → approval → vms update → %d notification(s): every link on the ledger (trace %s)\n",
		len(ch.NotificationIDs), ch.Trace)
	rep, err := d.st.Seal(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "ledger     verified: %s\n", rep)
	return nil
}
