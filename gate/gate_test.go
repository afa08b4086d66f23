package gate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/custody-dev/custody"
)

func TestCallOK(t *testing.T) {
	h := newHarness(t)
	args := `{ "n" : 1,"s":"caf\u00e9" ,"d":"2026-02-28"}`
	res, err := h.call("trace-ok", "echo", args)
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	if string(res.Output) != `{"ok":true}` || res.Trace != "trace-ok" {
		t.Fatalf("result = %+v", res)
	}
	e := h.entry(t, res.Receipt.Seq)
	if e.Kind != custody.KindCallSucceeded || e.Hash != res.Receipt.Hash || e.Trace != "trace-ok" || e.Actor != "agent-1" {
		t.Fatalf("receipt entry = %+v", e)
	}
	if !bytes.Equal(bodyArgs(e), []byte(args)) {
		t.Errorf("recorded arguments %s, want the exact bytes %s", bodyArgs(e), args)
	}
	if n := len(h.entries(t, custody.Query{Trace: "trace-ok"})); n != 1 {
		t.Errorf("a READ call wrote %d entries, want 1", n)
	}
	h.verify(t)
}

func TestCallNewTrace(t *testing.T) {
	h := newHarness(t)
	res, err := h.call("", "echo", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Trace) != 36 || res.Trace[14] != '4' {
		t.Fatalf("trace %q is not a UUID v4", res.Trace)
	}
}

func TestCallRefused(t *testing.T) {
	tests := []struct {
		name     string
		tool     string
		trace    string
		args     string
		kind     string
		instance string // expected first violation instance; "-" skips
		embedded bool   // the arguments are embedded as JSON on the ledger
	}{
		{name: "ErrExtraField", tool: "echo", args: `{"n":1,"x":2}`, kind: custody.EINVALID, instance: "", embedded: true},
		{name: "ErrWrongType", tool: "echo", args: `{"n":"1"}`, kind: custody.EINVALID, instance: "/n", embedded: true},
		{name: "ErrNotInteger", tool: "echo", args: `{"n":1.5}`, kind: custody.EINVALID, instance: "/n", embedded: true},
		{name: "ErrBadFormat", tool: "echo", args: `{"d":"2026-02-30"}`, kind: custody.EINVALID, instance: "/d", embedded: true},
		{name: "ErrTooLong", tool: "echo", args: `{"s":"` + strings.Repeat("x", 41) + `"}`, kind: custody.EINVALID, instance: "/s", embedded: true},
		{name: "ErrDuplicateKey", tool: "echo", args: `{"n":1,"n":2}`, kind: custody.EINVALID, instance: "-"},
		{name: "ErrBigInteger", tool: "echo", args: `{"n":9007199254740993}`, kind: custody.EINVALID, instance: "-"},
		{name: "ErrInvalidUTF8", tool: "echo", args: "{\"s\":\"\xff\"}", kind: custody.EINVALID, instance: "-"},
		{name: "ErrNotJSON", tool: "echo", args: `{"n":1`, kind: custody.EINVALID, instance: "-"},
		{name: "ErrEmpty", tool: "echo", args: ``, kind: custody.EINVALID, instance: "-"},
		{name: "ErrTooBig", tool: "echo", args: `{"s":"` + strings.Repeat("x", 1<<20) + `"}`, kind: custody.EINVALID, instance: "-"},
		{name: "ErrBadTrace", tool: "echo", trace: "bad\ntrace", args: `{}`, kind: custody.EINVALID, instance: "-"},
		{name: "ErrUnknownTool", tool: "rm_rf", args: `{}`, kind: custody.EDENIED, instance: "-", embedded: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			trace := tt.trace
			if trace == "" {
				trace = "trace-" + tt.name
			}
			_, err := h.call(trace, tt.tool, tt.args)
			e := h.wantRefused(t, err, tt.kind)
			ce := wantKind(t, err, tt.kind)
			if tt.kind == custody.EINVALID && len(ce.Violations) == 0 {
				t.Errorf("no violations on %v", err)
			}
			if tt.instance != "-" && ce.Violations[0].Instance != tt.instance {
				t.Errorf("violation at %q, want %q: %+v", ce.Violations[0].Instance, tt.instance, ce.Violations)
			}
			if tt.embedded && !bytes.Equal(bodyArgs(e), []byte(tt.args)) {
				t.Errorf("recorded arguments %s, want %s", bodyArgs(e), tt.args)
			}
			if !tt.embedded {
				var b struct {
					SHA  string `json:"arguments_sha256"`
					Size int    `json:"arguments_bytes"`
				}
				if err := json.Unmarshal(e.Body, &b); err != nil || len(b.SHA) != 64 || b.Size != len(tt.args) {
					t.Errorf("unparseable arguments not recorded by digest: %s", truncate(e.Body))
				}
			}
			if n := len(h.entries(t, custody.Query{})); n != 1 {
				t.Errorf("%d entries written, want exactly 1", n)
			}
			if h.ran("echo") != 0 {
				t.Errorf("the handler ran for a refused call")
			}
			h.verify(t)
		})
	}
}

func truncate(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}

func TestBudget(t *testing.T) {
	h := newHarness(t)
	for i := range 2 {
		if _, err := h.call("trace-b", "limited", `{}`); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	_, err := h.call("trace-b", "limited", `{}`)
	h.wantRefused(t, err, custody.EDENIED)
	if h.ran("limited") != 2 {
		t.Errorf("handler ran %d times, want 2", h.ran("limited"))
	}
	if _, err := h.call("trace-other", "limited", `{}`); err != nil {
		t.Fatalf("another trace has its own budget: %v", err)
	}
	// An attempt that fails the contract is not counted.
	_, err = h.call("trace-c", "limited", `{"x":1}`)
	wantKind(t, err, custody.EINVALID)
	for i := range 2 {
		if _, err := h.call("trace-c", "limited", `{}`); err != nil {
			t.Fatalf("trace-c call %d: %v", i+1, err)
		}
	}
}

// TestBudgetUnderRace checks that concurrent calls of one trace cannot
// pass its budget: the count is committed with the entry that releases
// the output, on condition that it stays within the budget.
func TestBudgetUnderRace(t *testing.T) {
	h := newHarness(t)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { _, _ = h.call("trace-race", "limited", `{}`) })
	}
	wg.Wait()
	if got := h.entries(t, custody.Query{Trace: "trace-race", Kind: custody.KindCallSucceeded}); len(got) != 2 {
		t.Fatalf("%d calls succeeded, want 2", len(got))
	}
	if got := h.entries(t, custody.Query{Trace: "trace-race", Kind: custody.KindCallRefused}); len(got) != 6 {
		t.Fatalf("%d calls refused, want 6", len(got))
	}
	if doc, err := h.db.State(context.Background(), "budget", "trace-race/limited"); err != nil || string(doc) != "2" {
		t.Fatalf("budget = %s, %v; want 2: the calls whose output was released", doc, err)
	}
	if doc, err := h.db.State(context.Background(), "refusals", "trace-race/limited"); err != nil || string(doc) != "6" {
		t.Fatalf("refusals = %s, %v; want 6", doc, err)
	}
}

func TestScope(t *testing.T) {
	h := newHarness(t)
	if _, err := h.call("trace-a", "chart", `{"patient_id":"P1"}`); err != nil {
		t.Fatalf("first touch: %v", err)
	}
	if _, err := h.call("trace-a", "chart", `{"patient_id":"P1"}`); err != nil {
		t.Fatalf("same trace again: %v", err)
	}
	_, err := h.call("trace-b", "chart", `{"patient_id":"P1"}`)
	e := h.wantRefused(t, err, custody.EDENIED)
	if _, vs := bodyError(e); len(vs) != 1 || vs[0].Instance != "/patient_id" {
		t.Errorf("violations = %+v, want one at /patient_id", vs)
	}
	if _, err := h.call("trace-b", "chart", `{"patient_id":"P2"}`); err != nil {
		t.Fatalf("another resource: %v", err)
	}
	if _, err := h.call("trace-b", "chart", `{}`); err != nil {
		t.Fatalf("no resource named: %v", err)
	}
	for _, bad := range []string{`{"patient_id":{"id":"P1"}}`, `{"patient_id":true}`, `{"patient_id":null}`} {
		_, err := h.call("trace-c", "chart", bad)
		e := h.wantRefused(t, err, custody.EINVALID)
		if _, vs := bodyError(e); len(vs) != 1 || vs[0].Instance != "/patient_id" {
			t.Errorf("%s: violations = %+v, want one at /patient_id", bad, vs)
		}
	}
	if h.ran("chart") != 4 {
		t.Errorf("chart ran %d times, want 4: none of the malformed", h.ran("chart"))
	}
}

func TestCustodyLink(t *testing.T) {
	h := newHarness(t)
	_, err := h.call("trace-l", "cite_brief", `{"brief_id":"B-1"}`)
	h.wantRefused(t, err, custody.EDENIED)

	if _, err := h.call("trace-l", "make_brief", `{"s":"1"}`); err != nil {
		t.Fatal(err)
	}
	res, err := h.call("trace-l", "cite_brief", `{"brief_id":"B-1"}`)
	if err != nil {
		t.Fatalf("linked call: %v", err)
	}
	if e := h.entry(t, res.Receipt.Seq); e.Refs["brief_id"] != "B-1" {
		t.Errorf("linked call refs = %v, want brief_id B-1", e.Refs)
	}

	_, err = h.call("trace-other", "cite_brief", `{"brief_id":"B-1"}`)
	h.wantRefused(t, err, custody.EDENIED)

	if _, err := h.call("trace-l", "fake_brief", `{"s":"2"}`); err != nil {
		t.Fatal(err)
	}
	_, err = h.call("trace-l", "cite_brief", `{"brief_id":"B-2"}`)
	h.wantRefused(t, err, custody.EDENIED)

	_, err = h.call("trace-l", "cite_brief", `{}`)
	h.wantRefused(t, err, custody.EDENIED)
	if h.ran("cite_brief") != 1 {
		t.Errorf("cite_brief ran %d times, want 1", h.ran("cite_brief"))
	}
}

func TestHandlerFailures(t *testing.T) {
	tests := []struct {
		name string
		tool string
		kind string
	}{
		{"ErrHandler", "failing", custody.EUNAVAILABLE},
		{"ErrDeadline", "slow", custody.EUNAVAILABLE},
		{"ErrDeadlineIgnored", "stuck", custody.EUNAVAILABLE},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			res, err := h.call("trace-f", tt.tool, `{"n":1}`)
			e := h.wantOutcome(t, err, tt.kind, custody.KindCallFailed)
			if res.Output != nil {
				t.Errorf("output %s returned with an error", res.Output)
			}
			if strings.Contains(custody.ErrorMessage(err), "/var/lib") {
				t.Errorf("internal detail reached the caller: %v", custody.ErrorMessage(err))
			}
			if !bytes.Equal(bodyArgs(e), []byte(`{"n":1}`)) {
				t.Errorf("recorded arguments %s", bodyArgs(e))
			}
		})
	}
}

func TestOutputBreach(t *testing.T) {
	h := newHarness(t)
	res, err := h.call("trace-o", "broken", `{}`)
	e := h.wantOutcome(t, err, custody.EINTERNAL, custody.KindContractBreach)
	if res.Output != nil {
		t.Fatalf("a breaching output was returned: %s", res.Output)
	}
	if strings.Contains(err.Error(), "do not show") || strings.Contains(custody.ErrorMessage(err), "do not show") {
		t.Errorf("the withheld output leaked into the error")
	}
	var b struct {
		Tool   string          `json:"tool"`
		Output json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(e.Body, &b); err != nil || b.Tool != "broken" || !strings.Contains(string(b.Output), "do not show") {
		t.Errorf("breach body = %s", e.Body)
	}
	if _, vs := bodyError(e); len(vs) == 0 {
		t.Errorf("breach recorded without violations: %s", e.Body)
	}
	if n := len(h.entries(t, custody.Query{Trace: "trace-o"})); n != 1 {
		t.Errorf("%d entries, want exactly the breach", n)
	}
}

func TestLedgerUnavailable(t *testing.T) {
	tests := []struct {
		name string
		tool string
		args string
		runs int64
	}{
		{"ErrWriteNeverRuns", "store", `{"n":1}`, 0},
		{"ErrReadResultWithheld", "echo", `{"n":1}`, 1},
		{"ErrRefusalUnrecorded", "echo", `{"x":1}`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.led.Down.Store(true)
			res, err := h.call("trace-u", tt.tool, tt.args)
			ce := wantKind(t, err, custody.EUNAVAILABLE)
			if ce.Message != "evidence ledger unavailable" || res.Output != nil {
				t.Errorf("error %q, output %s", ce.Message, res.Output)
			}
			if got := h.ran(tt.tool); got != tt.runs {
				t.Errorf("handler ran %d times, want %d", got, tt.runs)
			}
			if n := len(h.entries(t, custody.Query{})); n != 0 {
				t.Errorf("%d entries written through a failing ledger", n)
			}
		})
	}
}

func TestWriteIntentBeforeHandler(t *testing.T) {
	h := newHarness(t)
	args := `{"s":"a"  }`
	res, err := h.call("trace-w", "store", args)
	if err != nil {
		t.Fatalf("the handler did not find its intent entry: %v", err)
	}
	es := h.entries(t, custody.Query{Trace: "trace-w"})
	if len(es) != 2 || es[0].Kind != custody.KindCallStarted || es[1].Kind != custody.KindCallSucceeded || es[1].Seq != res.Receipt.Seq {
		t.Fatalf("entries = %+v, want call.started then call.succeeded", es)
	}
	for _, e := range es {
		if !bytes.Equal(bodyArgs(e), []byte(args)) {
			t.Errorf("%s holds arguments %s, want %s", e.Kind, bodyArgs(e), args)
		}
	}
}

// TestEveryOutcomeOneEntry runs a mix of calls and checks that each left
// exactly one outcome entry holding its exact argument bytes, and that the
// chain verifies.
func TestEveryOutcomeOneEntry(t *testing.T) {
	h := newHarness(t)
	calls := []struct{ tool, args string }{
		{"echo", `{"n": 1}`},
		{"echo", `{"n":"x"}`},
		{"store", "{\n\"s\":\"b\"}"},
		{"failing", `{"n":2}`},
		{"broken", `{ }`},
		{"get_time", `{"zone":"UTC"}`},
		{"write_note", `{"title":"T","text":"body"}`},
		{"post_announcement", `{"channel":"ops","message":"HI"}`},
		{"nope", `{}`},
	}
	outcome := map[string]bool{custody.KindCallSucceeded: true, custody.KindCallRefused: true, custody.KindCallFailed: true, custody.KindContractBreach: true}
	for i, c := range calls {
		trace := "trace-mix-" + string(rune('a'+i))
		_, err := h.call(trace, c.tool, c.args)
		var seq int64
		if err == nil {
			es := h.entries(t, custody.Query{Trace: trace, Kind: custody.KindCallSucceeded})
			seq = es[0].Seq
		} else {
			seq = wantKind(t, err, custody.ErrorKind(err)).Receipt.Seq
		}
		var outcomes []custody.Entry
		for _, e := range h.entries(t, custody.Query{Trace: trace}) {
			if outcome[e.Kind] {
				outcomes = append(outcomes, e)
			}
		}
		if len(outcomes) != 1 || outcomes[0].Seq != seq {
			t.Fatalf("%s %s: outcome entries %+v, want one at seq %d", c.tool, c.args, outcomes, seq)
		}
		if !bytes.Equal(bodyArgs(outcomes[0]), []byte(c.args)) {
			t.Errorf("%s: recorded %s, want %s", c.tool, bodyArgs(outcomes[0]), c.args)
		}
	}
	h.verify(t)
}

func TestCancelledCaller(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := h.gw.Call(ctx, custody.Call{Trace: "t", Tool: "echo", Args: json.RawMessage(`{}`)})
	if err == nil {
		t.Fatal("a cancelled call succeeded")
	}
}

// TestAbandonedHandlerAnswersLate: a handler abandoned at the deadline
// that answers afterwards never answers for a later call.
func TestAbandonedHandlerAnswersLate(t *testing.T) {
	// One processor: whatever the gateway keeps for reuse per processor,
	// the later calls meet it.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	h := newHarness(t)
	if _, err := h.call("trace-late", "stuck", `{"n":1}`); custody.ErrorKind(err) != custody.EUNAVAILABLE {
		t.Fatalf("stuck call: %v", err)
	}
	// The stuck handler answers a second in, long after its deadline.
	for deadline := time.Now().Add(10 * time.Second); h.stuckAnswers.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the stuck handler never answered")
		}
	}
	for i := range 16 {
		s := strconv.Itoa(i)
		res, err := h.call("trace-late", "make_brief", `{"n":1,"s":"`+s+`"}`)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if want := `"brief_id":"B-` + s + `"`; !strings.Contains(string(res.Output), want) {
			t.Fatalf("call %d got output %s, not its own (%s)", i, res.Output, want)
		}
	}
}
