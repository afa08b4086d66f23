package assure

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/tempstore"
	"github.com/custody-dev/custody/systems/llm"
)

// realNHS is an NHS number with a valid check digit outside the range
// reserved for testing: what the data policy forbids.
const realNHS = "4010232137"

// testRunner builds the runner of a one-case run of the example envelope
// on a real SQLite store, and returns it with the store.
func testRunner(t *testing.T, backend llm.Backend) (*runner, Store) {
	t.Helper()
	ctx := context.Background()
	reg, err := LoadRegistry(nil)
	if err != nil {
		t.Fatal(err)
	}
	env := mustEnvelope(t)
	db, _, release, err := tempstore.Open(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { release() })
	cfg := Config{Envelope: WardRoundEnvelope(), Cases: 1, Seed: 7}.withDefaults()
	r, err := newRunner(ctx, cfg, reg, env, db, backend)
	if err != nil {
		t.Fatal(err)
	}
	return r, db
}

// ledgerOf returns the entries of a store of a kind ("" for all).
func ledgerOf(t *testing.T, db Store, kind string) []custody.Entry {
	t.Helper()
	es, err := db.Entries(context.Background(), custody.Query{Kind: kind, Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// traceRunOf binds a trace of the runner's plan to its world.
func traceRunOf(t *testing.T, r *runner, s TraceSpec) *traceRun {
	t.Helper()
	w := newWorld(r.cases[s.Case-1], s.PatientID, r.cases[len(r.cases)-1], s.OtherID, s.Category, r.now)
	r.worlds.Add(s.TraceID, w)
	t.Cleanup(func() { r.worlds.Remove(s.TraceID) })
	return &traceRun{r: r, spec: s, world: w}
}

func TestRedact(t *testing.T) {
	hits := []Identifiable{{Kind: "nhs_number", Match: realNHS}}
	got := redact("NHS "+realNHS+" and again "+realNHS+".", hits)
	sum := sha256.Sum256([]byte(realNHS))
	want := "[redacted nhs_number sha256:" + hex.EncodeToString(sum[:])[:12] + "]"
	if got != "NHS "+want+" and again "+want+"." {
		t.Fatalf("redact = %q", got)
	}
	if sha(realNHS) != hex.EncodeToString(sum[:]) {
		t.Fatal("sha is not the hex SHA-256")
	}
	if redact("nothing here", nil) != "nothing here" {
		t.Fatal("redact changed clean text")
	}
}

// TestRecordedMessages: every message of the conversation is on the
// ledger exactly once, in order, with the exact tool call arguments.
func TestRecordedMessages(t *testing.T) {
	r, db := testRunner(t, scripted{Careful: true})
	spec := plan(r.env, 7, 1, 1)[0]
	if err := traceRunOf(t, r, spec).run(context.Background()); err != nil {
		t.Fatal(err)
	}
	msgs := ledgerOf(t, db, kindMessage)
	if len(msgs) < 4 {
		t.Fatalf("%d messages recorded", len(msgs))
	}
	var first, last messageBody
	for i, e := range msgs {
		var m messageBody
		if err := json.Unmarshal(e.Body, &m); err != nil {
			t.Fatal(err)
		}
		if m.Index != i || e.Trace != spec.TraceID || e.Actor != harnessActor || m.Redacted {
			t.Fatalf("message %d: %+v on trace %s", i, m, e.Trace)
		}
		if i == 0 {
			first = m
		}
		last = m
	}
	if first.Role != llm.RoleSystem || first.Content != systemPrompt(r.env) {
		t.Fatalf("first message %+v, want the system prompt", first)
	}
	if last.Role != llm.RoleAssistant || !strings.Contains(last.Content, "Ward round for patient "+spec.PatientID+" done.") {
		t.Fatalf("last message %+v, want the final answer", last)
	}
	var fin finished
	fins := ledgerOf(t, db, kindTraceFinished)
	if len(fins) != 1 || json.Unmarshal(fins[0].Body, &fin) != nil || fin.Stop != "final" || fin.Error != "" || fin.Final != last.Content ||
		fin.State.PatientID != spec.PatientID || len(fin.State.Notes) != 1 {
		t.Fatalf("trace end %s", fins[0].Body)
	}
	var st started
	sts := ledgerOf(t, db, kindTraceStarted)
	if len(sts) != 1 || json.Unmarshal(sts[0].Body, &st) != nil || st.TraceSpec != spec || st.Target != targetCareful || st.Seed != "7" {
		t.Fatalf("trace start %s", sts[0].Body)
	}
}

// TestMessageRedacted: a message with identifiable data goes on the ledger
// redacted, with a data policy entry that holds only hashes, and stops
// the run.
func TestMessageRedacted(t *testing.T) {
	r, db := testRunner(t, scripted{Careful: true})
	tr := traceRunOf(t, r, plan(r.env, 7, 1, 1)[0])
	msg := llm.Message{Role: llm.RoleAssistant, Content: "Patient is NHS " + realNHS + ".",
		ToolCalls: []llm.ToolCall{{ID: "c1", Name: noteTool, Arguments: json.RawMessage(`{"text": "` + realNHS + `"}`)}}}
	b := tr.messageBody(context.Background(), 3, msg)
	if !b.Redacted || strings.Contains(b.Content, realNHS) || strings.Contains(b.ToolCalls[0].Arguments, realNHS) || !strings.Contains(b.Content, "[redacted nhs_number sha256:") {
		t.Fatalf("body %+v, want it redacted", b)
	}
	if b.Index != 3 || b.ToolCalls[0].Name != noteTool || b.ToolCalls[0].ID != "c1" {
		t.Fatalf("body %+v", b)
	}
	if !tr.isStopped() || !r.stopped.Load() {
		t.Fatal("identifiable data did not stop the run")
	}
	// One hit for each time the number occurs: in the text and in the
	// arguments.
	es := ledgerOf(t, db, kindDataPolicy)
	var d dataPolicy
	if len(es) != 1 || json.Unmarshal(es[0].Body, &d) != nil || d.Source != "message" || len(d.Hits) != 2 || d.Hits[1] != (policyHit{"nhs_number", sha(realNHS)}) {
		t.Fatalf("data policy entries %+v", es)
	}
	for _, e := range ledgerOf(t, db, "") {
		if strings.Contains(string(e.Body), realNHS) {
			t.Fatalf("the number reached the ledger at seq %d", e.Seq)
		}
	}
	clean := tr.messageBody(context.Background(), 4, llm.Message{Role: llm.RoleUser, Content: taskPrompt(thisPatient)})
	if clean.Redacted || clean.Content != taskPrompt(thisPatient) {
		t.Fatalf("a clean message was changed: %+v", clean)
	}
}

// TestScanGate: arguments with identifiable data never reach the gateway.
func TestScanGate(t *testing.T) {
	r, db := testRunner(t, scripted{Careful: true})
	spec := plan(r.env, 7, 1, 1)[0]
	g := &scanGate{t: traceRunOf(t, r, spec)}
	ctx := context.Background()
	_, err := g.Call(ctx, custody.Call{Trace: spec.TraceID, Tool: noteTool, Actor: "agent",
		Args: json.RawMessage(`{"patient_id": "` + spec.PatientID + `", "request_id": "h-1", "text": "NHS ` + realNHS + `"}`)})
	if custody.ErrorKind(err) != custody.EDENIED || !strings.Contains(custody.ErrorMessage(err), "refused by the data policy") {
		t.Fatalf("call with identifiable arguments: %v, want EDENIED", err)
	}
	if n := len(ledgerOf(t, db, custody.KindCallStarted)); n != 0 {
		t.Fatalf("%d calls reached the gateway", n)
	}
	var d dataPolicy
	es := ledgerOf(t, db, kindDataPolicy)
	if len(es) != 1 || json.Unmarshal(es[0].Body, &d) != nil || d.Source != "tool_arguments" || d.Tool != noteTool || !r.stopped.Load() {
		t.Fatalf("data policy entries %+v", es)
	}
	res, err := g.Call(ctx, custody.Call{Trace: spec.TraceID, Tool: recordTool, Actor: "agent", Args: json.RawMessage(`{"patient_id": "` + spec.PatientID + `"}`)})
	if err != nil || !strings.Contains(string(res.Output), spec.PatientID) {
		t.Fatalf("a clean call: %s %v", res.Output, err)
	}
	if len(g.Tools()) != 7 {
		t.Fatalf("%d tools offered", len(g.Tools()))
	}
}

// failingBackend is a target that cannot be reached.
type failingBackend struct{ calls atomic.Int64 }

func (*failingBackend) Name() string { return "test:failing" }

func (b *failingBackend) Chat(context.Context, llm.Request) (llm.Response, error) {
	b.calls.Add(1)
	return llm.Response{}, custody.Errorf(custody.EUNAVAILABLE, "model server unreachable")
}

// TestTraceRunErrors: a target that fails ends its trace with the error on
// the ledger, and the run goes on; a trace stopped by the data policy
// says so.
func TestTraceRunErrors(t *testing.T) {
	t.Run("TargetUnreachable", func(t *testing.T) {
		b := &failingBackend{}
		r, db := testRunner(t, b)
		if err := traceRunOf(t, r, plan(r.env, 7, 1, 1)[0]).run(context.Background()); err != nil {
			t.Fatalf("run: %v, want the trace to end with the error recorded", err)
		}
		var fin finished
		fins := ledgerOf(t, db, kindTraceFinished)
		if len(fins) != 1 || json.Unmarshal(fins[0].Body, &fin) != nil || fin.Error != "model server unreachable" || b.calls.Load() != 1 {
			t.Fatalf("trace end %s after %d calls", fins[0].Body, b.calls.Load())
		}
	})
	t.Run("CancelledRun", func(t *testing.T) {
		r, _ := testRunner(t, &failingBackend{})
		ctx, cancel := context.WithCancel(context.Background())
		tr := traceRunOf(t, r, plan(r.env, 7, 1, 1)[0])
		cancel()
		if err := tr.run(ctx); err == nil {
			t.Fatal("a trace of a cancelled run ended cleanly")
		}
	})
	t.Run("DataPolicyStop", func(t *testing.T) {
		b := scriptedBackend{turn: func(facts) llm.Message {
			return llm.Message{Role: llm.RoleAssistant, Content: "The patient's real NHS number is " + realNHS + "."}
		}}
		r, db := testRunner(t, b)
		if err := traceRunOf(t, r, plan(r.env, 7, 1, 1)[0]).run(context.Background()); err != nil {
			t.Fatal(err)
		}
		var fin finished
		fins := ledgerOf(t, db, kindTraceFinished)
		if len(fins) != 1 || json.Unmarshal(fins[0].Body, &fin) != nil || fin.Error != (dataPolicyStop{}).Error() || strings.Contains(string(fins[0].Body), realNHS) {
			t.Fatalf("trace end %s", fins[0].Body)
		}
	})
}

// TestSimulatedApproverDecides: the human side approves the planned order,
// declines any other, and under MISSING_HUMAN_APPROVAL lets it expire.
func TestSimulatedApproverDecides(t *testing.T) {
	ctx := context.Background()
	pending := func(t *testing.T, r *runner, tr *traceRun, rx rxArgs) string {
		t.Helper()
		_, err := r.gw.Call(ctx, custody.Call{Trace: tr.spec.TraceID, Tool: prescribeTool, Actor: "agent", Args: mustJSON(rx)})
		e := custody.AsError(err)
		if e.Kind != custody.EPENDING || e.ApprovalRequestID == "" {
			t.Fatalf("prescription: %v, want it held for approval", err)
		}
		return e.ApprovalRequestID
	}
	specs := plan(mustEnvelope(t), 7, 1, 1)
	find := func(category string) TraceSpec {
		for _, s := range specs {
			if s.Category == category {
				return s
			}
		}
		t.Fatalf("no %q trace", category)
		return TraceSpec{}
	}
	tests := []struct {
		name     string
		category string
		order    func(tr *traceRun) rxArgs
		status   custody.ApprovalStatus
		says     string
	}{
		{"OKPlanned", "", func(tr *traceRun) rxArgs { return prescription(tr.spec.PatientID, tr.world.Due()) }, custody.ApprovalApproved, "The clinician approved approval"},
		{"ErrUnplanned", "", func(tr *traceRun) rxArgs {
			return rxArgs{PatientID: tr.spec.PatientID, Medicine: "diamorphine", Dose: "10 mg", Route: "IV", Reason: "r"}
		}, custody.ApprovalDeclined, "does not match the drug chart of this patient"},
		{"ErrSilent", injMissingApproval, func(tr *traceRun) rxArgs { return prescription(tr.spec.PatientID, tr.world.Due()) }, custody.ApprovalExpired, "expired: no clinician answered in time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, db := testRunner(t, scripted{Careful: true})
			tr := traceRunOf(t, r, find(tt.category))
			id := pending(t, r, tr, tt.order(tr))
			msg, err := tr.answer(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(msg, tt.says) || !strings.Contains(msg, id) {
				t.Fatalf("message %q, want %q", msg, tt.says)
			}
			a, err := r.approvals.Get(ctx, id)
			if err != nil || a.Status != tt.status {
				t.Fatalf("approval %s: %s (%v), want %s", id, a.Status, err, tt.status)
			}
			if tt.status != custody.ApprovalExpired && a.Operator != approverID {
				t.Fatalf("decided by %q, want %s", a.Operator, approverID)
			}
			if tt.status == custody.ApprovalExpired && len(ledgerOf(t, db, custody.KindApprovalExpired)) != 1 {
				t.Fatal("no approval.expired entry")
			}
		})
	}
	t.Run("ErrNoSuchApproval", func(t *testing.T) {
		r, _ := testRunner(t, scripted{Careful: true})
		tr := traceRunOf(t, r, specs[0])
		if _, err := tr.answer(ctx, "00000000-0000-4000-8000-000000000000"); err == nil || !strings.Contains(err.Error(), "read approval") {
			t.Fatalf("answer of no approval: %v", err)
		}
	})
}

// TestExpireTouchesOneApproval: the silent approver expires its own
// trace's approval, never another's.
func TestExpireTouchesOneApproval(t *testing.T) {
	ctx := context.Background()
	r, _ := testRunner(t, scripted{Careful: true})
	specs := plan(r.env, 7, 1, 1)
	var ids []string
	for _, s := range specs[:2] {
		tr := traceRunOf(t, r, s)
		_, err := r.gw.Call(ctx, custody.Call{Trace: s.TraceID, Tool: prescribeTool, Actor: "agent", Args: mustJSON(prescription(s.PatientID, tr.world.Due()))})
		ids = append(ids, custody.AsError(err).ApprovalRequestID)
	}
	a, err := r.approvals.Get(ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := r.expire(ctx, a); err != nil {
		t.Fatal(err)
	}
	for i, want := range []custody.ApprovalStatus{custody.ApprovalExpired, custody.ApprovalPending} {
		a, err := r.approvals.Get(ctx, ids[i])
		if err != nil || a.Status != want {
			t.Fatalf("approval %d: %s (%v), want %s", i, a.Status, err, want)
		}
	}
	only := onlyApproval{r.store, ids[1]}
	for status, n := range map[custody.ApprovalStatus]int{"": 1, custody.ApprovalPending: 1, custody.ApprovalExpired: 0} {
		as, err := only.Approvals(ctx, status)
		if err != nil || len(as) != n || (n == 1 && as[0].ID != ids[1]) {
			t.Errorf("onlyApproval.Approvals(%q) = %d (%v), want %d", status, len(as), err, n)
		}
	}
	if _, err := (onlyApproval{r.store, "00000000-0000-4000-8000-000000000000"}).Approvals(ctx, ""); err == nil {
		t.Error("onlyApproval of no approval lists one")
	}
}

// TestRunAll: every planned trace runs and is reported once; a data
// policy stop starts no new trace.
func TestRunAll(t *testing.T) {
	t.Run("Progress", func(t *testing.T) {
		r, db := testRunner(t, scripted{Careful: true})
		specs := plan(r.env, 7, 1, 1)
		var dones []int
		n, err := r.runAll(context.Background(), specs, 3, func(p Progress) {
			if p.Total != len(specs) {
				t.Errorf("progress total %d", p.Total)
			}
			dones = append(dones, p.Done)
		})
		if err != nil || n != len(specs) {
			t.Fatalf("runAll: %d, %v", n, err)
		}
		for i, d := range dones {
			if d != i+1 {
				t.Fatalf("progress %v, want 1 to %d", dones, len(specs))
			}
		}
		if got := len(ledgerOf(t, db, kindTraceFinished)); got != len(specs) {
			t.Fatalf("%d traces finished", got)
		}
	})
	t.Run("StopEndsTheRun", func(t *testing.T) {
		b := scriptedBackend{turn: func(facts) llm.Message {
			return llm.Message{Role: llm.RoleAssistant, Content: "NHS " + realNHS}
		}}
		r, db := testRunner(t, b)
		specs := plan(r.env, 7, 1, 1)
		n, err := r.runAll(context.Background(), specs, 1, nil)
		if err != nil || n != 1 || !r.stopped.Load() {
			t.Fatalf("runAll: %d traces, %v, stopped %v; want one", n, err, r.stopped.Load())
		}
		if got := len(ledgerOf(t, db, kindTraceStarted)); got != 1 {
			t.Fatalf("%d traces started after the stop", got)
		}
	})
	t.Run("Feed", func(t *testing.T) {
		specs := plan(mustEnvelope(t), 7, 1, 1)
		var stopped atomic.Bool
		next := make(chan TraceSpec, len(specs))
		feed(context.Background(), next, specs, &stopped)
		if len(next) != len(specs) {
			t.Fatalf("fed %d of %d", len(next), len(specs))
		}
		stopped.Store(true)
		next = make(chan TraceSpec, len(specs))
		feed(context.Background(), next, specs, &stopped)
		if len(next) != 0 {
			t.Fatalf("fed %d after the stop", len(next))
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		stopped.Store(false)
		feed(ctx, make(chan TraceSpec), specs, &stopped) // returns: nothing takes from it
	})
}

func TestBundledSchemas(t *testing.T) {
	r, _ := testRunner(t, scripted{Careful: true})
	for _, s := range r.gw.Tools() {
		raw, err := r.schemas.Bundle(s.Input)
		if err != nil || !json.Valid(raw) {
			t.Fatalf("%s: bundle %s: %v", s.Name, s.Input, err)
		}
	}
	if _, err := r.schemas.Bundle("https://example.com/none"); custody.ErrorKind(err) != custody.ENOTFOUND {
		t.Fatalf("an unknown schema: %v", err)
	}
}

func TestSeal(t *testing.T) {
	ctx := context.Background()
	db, priv, release, err := tempstore.Open(ctx, func() time.Time { return worldClock })
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if _, err := db.Append(ctx, custody.Entry{Kind: kindRunStarted, Actor: harnessActor, Body: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	ev, err := seal(ctx, db, priv)
	if err != nil {
		t.Fatal(err)
	}
	if ev.entries != 1 || ev.head == "" || !ev.pub.Equal(db.PublicKey()) || !strings.Contains(string(ev.jsonl), `"checkpoint"`) {
		t.Fatalf("evidence %+v", ev)
	}
	_, other, releaseOther, err := tempstore.Open(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseOther()
	if _, err := seal(ctx, db, other); err == nil || !strings.Contains(err.Error(), "does not match the ledger's public key") {
		t.Fatalf("seal with another key: %v", err)
	}
}
