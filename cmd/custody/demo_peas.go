package main

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
	"github.com/custody-dev/custody/systems/llm"
	"github.com/custody-dev/custody/systems/peas"
	"github.com/custody-dev/custody/systems/peas/otelspan"
)

// demoOperator is the scripted operator of the demo.
const demoOperator = "demo-operator"

// demoMessage is the sign message the scripted operator edits in.
const demoMessage = "WHITEOUT. PILE-UP AHEAD. SLOW DOWN NOW"

// flushTimeout bounds flushing the chain's spans when the demo ends.
const flushTimeout = 5 * time.Second

// runDemoPeas runs the pile-up chain in-process on the whiteout
// reconstruction with a scripted operator and prints its chain of custody
// and the ledger verification. It exits 0 only when every link holds, a
// replayed approval is refused and the ledger verifies. With an OTLP
// endpoint (--otlp, or the OTEL_EXPORTER_OTLP_* variables) each hop is a
// span exported there and the brief carries the prediction's ids.
func (m *Main) runDemoPeas(ctx context.Context, args []string) int {
	fs := m.flags("demo peas", "[--data DIR] [--llm URL] [--llm-edge URL] [--otlp URL]")
	data := fs.String("data", "", "data `DIR` (default: a temporary directory, removed afterwards)")
	llmURL := fs.String("llm", m.env("CUSTODY_LLM", "template"), "tool-calling backend `URL`: template, ollama://HOST:PORT/MODEL, openai://HOST:PORT/v1/MODEL")
	edgeURL := fs.String("llm-edge", m.env("CUSTODY_LLM_EDGE", ""), "edge text backend `URL` for language hops")
	otlpURL := fs.String("otlp", "", "OTLP/HTTP `URL` to export the chain's spans to, e.g. http://localhost:4318 (default: "+
		otelspan.EnvTracesEndpoint+" or "+otelspan.EnvEndpoint+"; none: tracing off)")
	contracts := m.contractsFlag(fs)
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	router, err := llm.NewRouter(*llmURL, *edgeURL)
	if err != nil {
		return m.fail(err)
	}
	dir, cleanup, err := demoDir(*data)
	if err != nil {
		return m.fail(err)
	}
	defer cleanup()
	tracer, shutdown, err := otelspan.NewTracer(ctx, *otlpURL, otelspan.WithGetenv(m.Getenv))
	if err != nil {
		return m.fail(&custody.Error{Kind: custody.EINVALID, Message: "--otlp: " + err.Error(), Err: err})
	}
	defer m.flushSpans(shutdown)
	st, sys, err := m.openPeasStack(ctx, dir, *contracts, router, peas.TracerOf(tracer))
	if err != nil {
		return m.fail(err)
	}
	defer st.Close()
	if err := m.demoChain(ctx, st, sys); err != nil {
		fmt.Fprintf(m.Stdout, "FAILED: %v\n", custody.ErrorMessage(err))
		return m.fail(err)
	}
	return exitOK
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
// that cannot be reached is reported, not fatal: the chain of custody is
// on the ledger either way.
func (m *Main) flushSpans(shutdown func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	if err := shutdown(ctx); err != nil {
		fmt.Fprintf(m.Stderr, "custody: warning: %v\n", err)
	}
}

// openPeasStack opens the core stack with the pile-up tools and attaches
// the system to its stores. A nil tracer leaves tracing off.
func (m *Main) openPeasStack(ctx context.Context, dir, contracts string, router llm.Router, tracer peas.Tracer) (*stack, *peas.System, error) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	sys := peas.New(peas.Deps{LLM: router, Logger: quiet, Tracer: tracer})
	st, err := m.sqliteOnly().openStack(ctx, dir, contracts, sys.Tools()...) // a scratch run, never a shared store
	if err != nil {
		return nil, nil, err
	}
	sys.Attach(st.approvals, st.db, st.db, st.reg)
	return st, sys, nil
}

// demoChain runs the chain, plays the operator and checks every link.
func (m *Main) demoChain(ctx context.Context, st *stack, sys *peas.System) error {
	c := peas.DefaultCorridors()[0]
	ws := peas.Scenario(c.Scenario)
	w := ws[len(ws)-1]
	fmt.Fprintf(m.Stdout, "corridor   %s (%s), window at minute %d\n", c.LocationID, c.Name, w.Minute)
	ch, err := sys.Start(ctx, st.gw, c.LocationID, w.Readings)
	if err != nil {
		return err
	}
	if ch.Stage != peas.StagePending {
		return fmt.Errorf("chain stopped at %q before the approval: %s", ch.Stage, ch.Final)
	}
	fmt.Fprintf(m.Stdout, "signature  %s  severity %s\nbrief      %s\napproval   %s  pending for %s\n",
		ch.SignatureID, ch.Severity, ch.BriefID, ch.ApprovalID, peas.DefaultOperator)
	if tid, sid := predictionIDs(ch); tid != "" {
		fmt.Fprintf(m.Stdout, "otel       trace %s  brief span %s\n", tid, sid)
	}
	if err := m.demoOperator(ctx, st, sys, ch.ApprovalID); err != nil {
		return err
	}
	if err := sys.Continue(ctx, st.gw, ch); err != nil {
		return err
	}
	if ch.Stage != peas.StageNotified {
		return fmt.Errorf("chain stopped at %q after the approval: %s", ch.Stage, ch.Final)
	}
	shown, err := signMessage(ctx, sys, c.Billboard)
	if err != nil {
		return err
	}
	if shown != demoMessage {
		return fmt.Errorf("sign %s shows %q, not the approved %q", c.Billboard, shown, demoMessage)
	}
	fmt.Fprintf(m.Stdout, "vms update %s  sign %s shows %q\n", ch.VMSUpdateID, c.Billboard, shown)
	for _, id := range ch.NotificationIDs {
		fmt.Fprintf(m.Stdout, "notified   %s\n", id)
	}
	if err := m.demoReplay(ctx, st, ch); err != nil {
		return err
	}
	return m.demoVerify(ctx, st, ch)
}

// predictionIDs returns the OpenTelemetry ids compose_ops_brief reported,
// "" when tracing is off.
func predictionIDs(ch *peas.Chain) (traceID, spanID string) {
	for _, o := range ch.Transcript.Outcomes {
		if o.Call.Name != peas.ToolBrief || o.Err != nil {
			continue
		}
		var b peas.BriefOutput
		if json.Unmarshal(o.Output, &b) == nil && b.TraceID != nil && b.SpanID != nil {
			return *b.TraceID, *b.SpanID
		}
	}
	return "", ""
}

// signMessage returns what a sign of the registry shows.
func signMessage(ctx context.Context, sys *peas.System, billboard string) (string, error) {
	signs, err := sys.Signs(ctx)
	if err != nil {
		return "", err
	}
	for _, sg := range signs {
		if sg.BillboardID == billboard && sg.State == peas.SignPosted {
			return sg.Message, nil
		}
	}
	return "", fmt.Errorf("sign %s shows nothing", billboard)
}

// demoOperator edits the sign message, chooses the urgent voice and
// approves, as an operator in the console would.
func (m *Main) demoOperator(ctx context.Context, st *stack, sys *peas.System, id string) error {
	a, err := st.approvals.Get(ctx, id)
	if err != nil {
		return err
	}
	var act peas.VMSAction
	if err := json.Unmarshal(a.Arguments, &act); err != nil {
		return fmt.Errorf("read proposed sign update: %w", err)
	}
	fmt.Fprintf(m.Stdout, "operator   %s edits %q to %q, chooses the urgent voice and approves\n", demoOperator, act.Message, demoMessage)
	act.Message = demoMessage
	edited, err := json.Marshal(act)
	if err != nil {
		return fmt.Errorf("encode edited sign update: %w", err)
	}
	if err := sys.ChooseVoice(ctx, id, peas.VoiceUrgent, demoOperator); err != nil {
		return err
	}
	_, err = st.approvals.Decide(ctx, id, approval.Decision{Decision: approval.Approve, Operator: demoOperator, Arguments: edited})
	return err
}

// demoReplay posts the sign again with the used approval: the gateway must
// refuse it.
func (m *Main) demoReplay(ctx context.Context, st *stack, ch *peas.Chain) error {
	a, err := st.approvals.Get(ctx, ch.ApprovalID)
	if err != nil {
		return err
	}
	var act peas.VMSAction
	if err := json.Unmarshal(a.Arguments, &act); err != nil {
		return fmt.Errorf("read approved sign update: %w", err)
	}
	args, _ := json.Marshal(peas.VMSInput{ApprovalRequestID: a.ID, BillboardID: act.BillboardID, Message: act.Message, DurationS: act.DurationS})
	_, err = st.gw.Call(ctx, custody.Call{Trace: ch.Trace, Tool: peas.ToolVMS, Args: args, Actor: "demo", Via: "cli"})
	e := custody.AsError(err)
	if err == nil || e.Receipt == nil {
		return errors.New("a replayed approval was not refused on the ledger")
	}
	fmt.Fprintf(m.Stdout, "replay     refused (%s) at ledger seq %d\n", e.Kind, e.Receipt.Seq)
	return nil
}

// demoVerify checks that each id of the chain is on the ledger in the
// chain's trace and that the whole ledger verifies.
func (m *Main) demoVerify(ctx context.Context, st *stack, ch *peas.Chain) error {
	refs := [][2]string{{"signature_id", ch.SignatureID}, {"brief_id", ch.BriefID}, {"approval_request_id", ch.ApprovalID},
		{"vms_update_id", ch.VMSUpdateID}}
	for _, id := range ch.NotificationIDs {
		refs = append(refs, [2]string{"notification_id", id})
	}
	for _, r := range refs {
		es, err := st.db.Entries(ctx, custody.Query{Trace: ch.Trace, Kind: custody.KindCallSucceeded, Refs: map[string]string{r[0]: r[1]}})
		if err != nil {
			return err
		}
		if len(es) == 0 {
			return fmt.Errorf("%s %s is not on the ledger in trace %s", r[0], r[1], ch.Trace)
		}
	}
	fmt.Fprintf(m.Stdout, "chain      signature → brief → approval → vms update → %d notification(s): every link on the ledger (trace %s)\n",
		len(ch.NotificationIDs), ch.Trace)
	return m.demoLedger(ctx, st)
}
