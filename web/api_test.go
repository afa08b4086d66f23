package web_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/store/sqlite"
)

func TestCallOK(t *testing.T) {
	e := newEnv(t)
	args := `{ "title" : "shopping",  "text":"milk, eggs" }`
	res := e.call("trace-ok", "write_note", args)
	if res.Status != 200 {
		t.Fatalf("status %d: %s", res.Status, res.Body)
	}
	var out custody.Result
	if err := json.Unmarshal(res.Body, &out); err != nil {
		t.Fatal(err)
	}
	if out.Trace != "trace-ok" || out.Receipt.Seq == 0 || out.Receipt.Hash == "" || !bytes.Contains(out.Output, []byte(`"note_id"`)) {
		t.Fatalf("result %+v", out)
	}
	got := e.entries("trace-ok", custody.KindCallSucceeded)
	if len(got) != 1 || got[0].Seq != out.Receipt.Seq || got[0].Hash != out.Receipt.Hash {
		t.Fatalf("ledger has %+v, want the receipt %+v", got, out.Receipt)
	}
	if !bytes.Contains(got[0].Body, []byte(args)) {
		t.Errorf("entry body %s does not hold the exact argument bytes %s", got[0].Body, args)
	}
}

// TestCallRefused checks that every refusal answers with its kind's status
// and is exactly one ledger entry holding the exact argument bytes.
func TestCallRefused(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name, tool, args string
		status           int
		kind             string
		violation        string // an instance the violations must name
	}{
		{"ErrExtraField", "write_note", `{"title":"t", "text":"x",  "extra" : 1}`, 400, custody.EINVALID, ""},
		{"ErrWrongType", "write_note", `{"title": 7, "text":"x"}`, 400, custody.EINVALID, "/title"},
		{"ErrBadFormat", "once", `{"n":1, "at":"yesterday at noon"}`, 400, custody.EINVALID, "/at"},
		{"ErrMissing", "write_note", `{"title":"t"}`, 400, custody.EINVALID, ""},
		{"ErrEnumValue", "post_announcement", `{"channel":"random","message":"HI"}`, 400, custody.EINVALID, "/channel"},
		{"ErrUnknownTool", "rm_rf", `{"path":"/"}`, 403, custody.EDENIED, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trace := "trace-" + tc.name
			res := e.call(trace, tc.tool, tc.args)
			if res.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", res.Status, tc.status, res.Body)
			}
			d := res.Error(t)
			if d.Kind != tc.kind || d.Message == "" || d.TraceID != trace || d.Receipt == nil {
				t.Fatalf("error %+v", d)
			}
			if tc.kind == custody.EINVALID && len(d.Violations) == 0 {
				t.Errorf("no violations in %s", res.Body)
			}
			if tc.violation != "" && !hasViolation(d.Violations, tc.violation) {
				t.Errorf("violations %+v do not name %s", d.Violations, tc.violation)
			}
			all := e.entries(trace, "")
			if len(all) != 1 || all[0].Kind != custody.KindCallRefused || all[0].Seq != d.Receipt.Seq {
				t.Fatalf("want exactly one call.refused entry at seq %d, ledger has %+v", d.Receipt.Seq, all)
			}
			if !bytes.Contains(all[0].Body, []byte(tc.args)) {
				t.Errorf("entry body %s does not hold the exact argument bytes %s", all[0].Body, tc.args)
			}
		})
	}
	if n := e.runs.Load(); n != 0 {
		t.Errorf("a refused call ran a handler %d times", n)
	}
}

func hasViolation(vs []custody.Violation, instance string) bool {
	for _, v := range vs {
		if v.Instance == instance {
			return true
		}
	}
	return false
}

func TestBudgetExhausted(t *testing.T) {
	e := newEnv(t)
	if res := e.call("trace-budget", "once", `{"n":1}`); res.Status != 200 {
		t.Fatalf("first call: %d %s", res.Status, res.Body)
	}
	args := `{"n":2}`
	res := e.call("trace-budget", "once", args)
	if res.Status != 403 || res.Error(t).Kind != custody.EDENIED {
		t.Fatalf("second call: %d %s", res.Status, res.Body)
	}
	refused := e.entries("trace-budget", custody.KindCallRefused)
	if len(refused) != 1 || !bytes.Contains(refused[0].Body, []byte(args)) {
		t.Fatalf("want one refusal holding %s, got %+v", args, refused)
	}
	if res := e.call("trace-other", "once", `{"n":3}`); res.Status != 200 {
		t.Fatalf("another trace has its own budget: %d %s", res.Status, res.Body)
	}
}

// TestRequestEnvelope checks what the API itself refuses before a call
// reaches the gateway: nothing of it is on the ledger.
func TestRequestEnvelope(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct{ name, body string }{
		{"ErrDuplicateMember", `{"tool":"get_time","tool":"write_note","arguments":{}}`},
		{"ErrUnknownMember", `{"tool":"get_time","arguments":{},"priority":"high"}`},
		{"ErrToolNotString", `{"tool":["get_time"],"arguments":{}}`},
		{"ErrNoTool", `{"arguments":{}}`},
		{"ErrNotObject", `["get_time"]`},
		{"ErrTrailing", `{"tool":"get_time","arguments":{}} {}`},
		{"ErrBroken", `{"tool":"get_time","arguments":{`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := e.do("POST", "/v1/calls", agentToken, []byte(tc.body))
			if res.Status != 400 || res.Error(t).Kind != custody.EINVALID {
				t.Fatalf("status %d: %s", res.Status, res.Body)
			}
		})
	}
	if n := len(e.entries("", "")); n != 0 {
		t.Errorf("refused requests left %d ledger entries", n)
	}
}

func TestAuth(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name, method, path, token string
		status                    int
	}{
		{"ErrNoToken", "POST", "/v1/calls", "", 401},
		{"ErrWrongToken", "POST", "/v1/calls", "not-a-token-at-all-0000", 401},
		{"ErrOperatorCalls", "POST", "/v1/calls", operatorToken, 403},
		{"ErrAgentReadsLedger", "GET", "/v1/ledger", agentToken, 403},
		{"ErrAgentReadsApprovals", "GET", "/v1/approvals", agentToken, 403},
		{"ErrNoTokenLedger", "GET", "/v1/ledger", "", 401},
		{"AuditorReadsLedger", "GET", "/v1/ledger", auditorToken, 200},
		{"AgentListsTools", "GET", "/v1/tools", agentToken, 200},
		{"HealthWithoutToken", "GET", "/healthz", "", 200},
		{"MetricsWithoutToken", "GET", "/metrics", "", 200},
		{"ErrUnknownEndpoint", "GET", "/v1/nothing", auditorToken, 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := e.do(tc.method, tc.path, tc.token, []byte(`{"tool":"get_time","arguments":{}}`))
			if res.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", res.Status, tc.status, res.Body)
			}
			if tc.status >= 400 {
				res.Error(t)
			}
		})
	}
	if n := len(e.entries("", "")); n != 0 {
		t.Errorf("unauthorised requests left %d ledger entries", n)
	}
}

// pending calls post_announcement and returns the approval id it waits for.
func (e *env) pending(trace, args string, wantKind string) string {
	e.t.Helper()
	res := e.call(trace, "post_announcement", args)
	want := 202
	if wantKind != custody.EPENDING {
		want = 409
	}
	if res.Status != want {
		e.t.Fatalf("status %d, want %d: %s", res.Status, want, res.Body)
	}
	d := res.Error(e.t)
	if d.Kind != wantKind || d.ApprovalRequestID == "" || d.TraceID != trace {
		e.t.Fatalf("error %+v", d)
	}
	if _, err := time.Parse(time.RFC3339, d.ExpiresAt); err != nil {
		e.t.Fatalf("expires_at %q: %v", d.ExpiresAt, err)
	}
	return d.ApprovalRequestID
}

// TestApprovalOfAnotherAgent checks that an approval one agent asked for
// does not authorise another agent naming the same trace.
func TestApprovalOfAnotherAgent(t *testing.T) {
	e := newEnv(t)
	const args = `{"channel":"general","message":"LUNCH AT NOON"}`
	id := e.pending("t-bot", args, custody.EPENDING)
	if res := e.decide(id, `{"decision":"approved"}`); res.Status != 200 {
		t.Fatalf("decide: %d %s", res.Status, res.Body)
	}
	res := e.callAs(agent2Token, "t-bot", "post_announcement", args)
	if res.Status != 403 || res.Error(t).Kind != custody.EDENIED || res.Error(t).ApprovalRequestID != id {
		t.Fatalf("another agent's call: %d %s, want 403 denied naming %s", res.Status, res.Body, id)
	}
	if n := len(e.entries("t-bot", custody.KindCallSucceeded)); n != 0 {
		t.Fatalf("%d successful posts, want none", n)
	}
	if res := e.call("t-bot", "post_announcement", args); res.Status != 200 {
		t.Fatalf("the requester's call: %d %s", res.Status, res.Body)
	}
}

// TestApprovals: each case has a store of its own, since an approval
// serves every trace of the agent that asked: cases sharing one would
// find each other's approvals of the same action.
func TestApprovals(t *testing.T) {
	const args = `{"channel":"general", "message":"LUNCH AT NOON"}`

	t.Run("Pending", func(t *testing.T) {
		e := newEnv(t)
		id := e.pending("t-pending", args, custody.EPENDING)
		if again := e.pending("t-pending", args, custody.EPENDING); again != id {
			t.Errorf("still pending: a second request %s was made next to %s", again, id)
		}
		refused := e.entries("t-pending", custody.KindCallRefused)
		if len(refused) != 2 || !bytes.Contains(refused[0].Body, []byte(args)) {
			t.Fatalf("want two refusals holding the exact arguments, got %+v", refused)
		}
		if n := len(e.entries("t-pending", custody.KindApprovalRequest)); n != 1 {
			t.Errorf("%d approval requests, want 1", n)
		}
		res := e.do("GET", "/v1/approvals?status=pending", operatorToken, nil)
		if res.Status != 200 || !strings.Contains(string(res.Body), id) {
			t.Fatalf("inbox: %d %s", res.Status, res.Body)
		}
	})

	t.Run("Declined", func(t *testing.T) {
		e := newEnv(t)
		id := e.pending("t-declined", args, custody.EPENDING)
		res := e.decide(id, `{"decision":"declined","note":"not today"}`)
		if res.Status != 200 {
			t.Fatalf("decide: %d %s", res.Status, res.Body)
		}
		var a custody.Approval
		json.Unmarshal(res.Body, &a)
		if a.Status != custody.ApprovalDeclined || a.Operator != "op-1" || a.Note != "not today" {
			t.Fatalf("decided %+v", a)
		}
		res = e.call("t-declined", "post_announcement", args)
		if res.Status != 403 || res.Error(t).Kind != custody.EDENIED {
			t.Fatalf("call after decline: %d %s", res.Status, res.Body)
		}
		if res := e.decide(id, `{"decision":"approved"}`); res.Status != 409 {
			t.Errorf("second decision: %d %s", res.Status, res.Body)
		}
	})

	t.Run("ApprovedThenReplayed", func(t *testing.T) {
		e := newEnv(t)
		id := e.pending("t-approved", args, custody.EPENDING)
		if res := e.decide(id, `{"decision":"approved","operator_id":"op-1"}`); res.Status != 200 {
			t.Fatalf("decide: %d %s", res.Status, res.Body)
		}
		res := e.call("t-approved", "post_announcement", args)
		if res.Status != 200 || !strings.Contains(string(res.Body), "LUNCH AT NOON") {
			t.Fatalf("approved call: %d %s", res.Status, res.Body)
		}
		res = e.call("t-approved", "post_announcement", args)
		if res.Status != 409 || res.Error(t).Kind != custody.ECONFLICT {
			t.Fatalf("replayed call: %d %s", res.Status, res.Body)
		}
		if n := len(e.entries("t-approved", custody.KindCallSucceeded)); n != 1 {
			t.Errorf("%d successful posts, want 1", n)
		}
	})

	t.Run("DifferentArguments", func(t *testing.T) {
		e := newEnv(t)
		id := e.pending("t-diff", args, custody.EPENDING)
		if res := e.decide(id, `{"decision":"approved"}`); res.Status != 200 {
			t.Fatalf("decide: %d %s", res.Status, res.Body)
		}
		other := e.pending("t-diff", `{"channel":"ops","message":"LUNCH AT NOON"}`, custody.EPENDING)
		if other == id {
			t.Fatalf("the approval of one action authorised another")
		}
		if n := len(e.entries("t-diff", custody.KindCallSucceeded)); n != 0 {
			t.Errorf("%d posts ran", n)
		}
	})

	t.Run("EditedByOperator", func(t *testing.T) {
		e := newEnv(t)
		id := e.pending("t-edit", args, custody.EPENDING)
		edited := `{"channel":"general","message":"LUNCH AT ONE"}`
		if res := e.decide(id, `{"decision":"approved","arguments":`+edited+`}`); res.Status != 200 {
			t.Fatalf("decide: %d %s", res.Status, res.Body)
		}
		if res := e.call("t-edit", "post_announcement", args); res.Status != 403 {
			t.Fatalf("the original arguments ran after an edit: %d %s", res.Status, res.Body)
		}
		if res := e.call("t-edit", "post_announcement", edited); res.Status != 200 {
			t.Fatalf("edited call: %d %s", res.Status, res.Body)
		}
		bad := `{"channel":"alerts","message":"LUNCH AT ONE"}`
		id2 := e.pending("t-edit2", args, custody.EPENDING)
		if res := e.decide(id2, `{"decision":"approved","arguments":`+bad+`}`); res.Status != 400 {
			t.Fatalf("edit of a field that is not editable: %d %s", res.Status, res.Body)
		}
	})

	t.Run("Expired", func(t *testing.T) {
		e := newEnv(t)
		id := e.pending("t-expired", args, custody.EPENDING)
		e.clock.Add(6 * time.Minute)
		if res := e.decide(id, `{"decision":"approved"}`); res.Status != 409 || res.Error(t).Kind != custody.EEXPIRED {
			t.Fatalf("decision after expiry: %d %s", res.Status, res.Body)
		}
		if next := e.pending("t-expired", args, custody.EEXPIRED); next == id {
			t.Errorf("no new request after expiry")
		}
	})

	t.Run("ErrNotOperator", func(t *testing.T) {
		e := newEnv(t)
		id := e.pending("t-agent", args, custody.EPENDING)
		for _, tok := range []string{agentToken, auditorToken} {
			res := e.do("POST", "/v1/approvals/"+id+"/decision", tok, []byte(`{"decision":"approved"}`))
			if res.Status != 403 || res.Error(t).Kind != custody.EDENIED {
				t.Fatalf("decision with a non-operator token: %d %s", res.Status, res.Body)
			}
		}
		for _, tok := range []string{"", "forged-token-000000000000"} {
			res := e.do("POST", "/v1/approvals/"+id+"/decision", tok, []byte(`{"decision":"approved"}`))
			if res.Status != 401 {
				t.Fatalf("decision without a valid token: %d %s", res.Status, res.Body)
			}
		}
		res := e.decide(id, `{"decision":"approved","operator_id":"someone-else"}`)
		if res.Status != 403 {
			t.Fatalf("decision in another operator's name: %d %s", res.Status, res.Body)
		}
		res = e.do("GET", "/v1/approvals/"+id, auditorToken, nil)
		var a custody.Approval
		if err := json.Unmarshal(res.Body, &a); err != nil || a.Status != custody.ApprovalPending {
			t.Fatalf("approval after refused decisions: %d %s", res.Status, res.Body)
		}
		if n := len(e.entries("t-agent", custody.KindApprovalDecided)); n != 0 {
			t.Errorf("%d decisions recorded", n)
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		e := newEnv(t)
		res := e.decide("00000000-0000-4000-8000-000000000000", `{"decision":"approved"}`)
		if res.Status != 404 || res.Error(t).Kind != custody.ENOTFOUND {
			t.Fatalf("%d %s", res.Status, res.Body)
		}
	})
}

func TestLedgerUnavailable(t *testing.T) {
	e := newEnv(t)
	e.ledger.Down.Store(true)
	res := e.call("t-down", "count_write", `{"n":1}`)
	if res.Status != 503 || res.Error(t).Kind != custody.EUNAVAILABLE {
		t.Fatalf("%d %s", res.Status, res.Body)
	}
	if strings.Contains(string(res.Body), "fire") {
		t.Errorf("internal detail leaked: %s", res.Body)
	}
	if n := e.runs.Load(); n != 0 {
		t.Fatalf("the handler ran %d times without evidence", n)
	}
	if n := len(e.entries("", "")); n != 0 {
		t.Errorf("%d entries", n)
	}
	e.ledger.Down.Store(false)
	if res := e.call("t-up", "count_write", `{"n":1}`); res.Status != 200 {
		t.Fatalf("after recovery: %d %s", res.Status, res.Body)
	}
}

// A store that failed closed cannot say its head: /healthz tells the
// supervisor so, in the one error shape, without the internal detail.
func TestHealthzLedgerDown(t *testing.T) {
	e := newEnv(t)
	e.ledger.HeadDown.Store(true)
	res := e.do("GET", "/healthz", "", nil)
	if res.Status != 503 || res.Error(t).Kind != custody.EUNAVAILABLE {
		t.Fatalf("%d %s", res.Status, res.Body)
	}
	if strings.Contains(string(res.Body), "fire") {
		t.Errorf("internal detail leaked: %s", res.Body)
	}
	e.ledger.HeadDown.Store(false)
	if res := e.do("GET", "/healthz", "", nil); res.Status != 200 {
		t.Fatalf("after recovery: %d %s", res.Status, res.Body)
	}
}

// A store that cannot write (here its database file was removed under
// it) answers 503 on /healthz with the reason, and without its paths.
func TestHealthzStoreCannotWrite(t *testing.T) {
	e := newEnv(t)
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(filepath.Join(e.db.Dir(), sqlite.DatabaseFile+suffix))
	}
	res := e.do("GET", "/healthz", "", nil)
	if res.Status != 503 || !strings.Contains(res.Error(t).Message, "the database file was removed or replaced") {
		t.Fatalf("%d %s", res.Status, res.Body)
	}
	if strings.Contains(string(res.Body), e.db.Dir()) {
		t.Errorf("the data directory's path leaked: %s", res.Body)
	}
}

func TestOutputBreach(t *testing.T) {
	e := newEnv(t)
	res := e.call("t-breach", "bad_output", `{"n":1}`)
	if res.Status != 500 {
		t.Fatalf("%d %s", res.Status, res.Body)
	}
	d := res.Error(t)
	if d.Kind != custody.EINTERNAL || !strings.Contains(d.Message, "withheld") || len(d.Violations) != 0 {
		t.Errorf("error %+v", d)
	}
	if strings.Contains(string(res.Body), "s3cr3t") || strings.Contains(string(res.Body), "yes") {
		t.Errorf("the broken output reached the agent: %s", res.Body)
	}
	if e.runs.Load() != 1 {
		t.Errorf("handler runs %d", e.runs.Load())
	}
	var found bool
	for _, en := range e.entries("t-breach", "") {
		found = found || bytes.Contains(en.Body, []byte("s3cr3t"))
	}
	if !found {
		t.Errorf("the broken output is not on the ledger for auditors")
	}
}

func TestReads(t *testing.T) {
	e := newEnv(t)
	for i := range 5 {
		if res := e.call("t-read", "write_note", `{"title":"n","text":"note `+string(rune('a'+i))+`"}`); res.Status != 200 {
			t.Fatalf("%d %s", res.Status, res.Body)
		}
	}
	e.call("t-read2", "write_note", `{"bad":1}`)

	var page struct {
		Entries   []custody.Entry `json:"entries"`
		NextAfter int64           `json:"next_after"`
		Head      custody.Receipt `json:"head"`
	}
	res := e.do("GET", "/v1/ledger?after=2&limit=3", auditorToken, nil)
	if err := json.Unmarshal(res.Body, &page); err != nil || res.Status != 200 {
		t.Fatalf("%d %s", res.Status, res.Body)
	}
	if len(page.Entries) != 3 || page.Entries[0].Seq != 3 || page.NextAfter != 5 || page.Head.Seq == 0 {
		t.Fatalf("page %+v", page)
	}
	res = e.do("GET", "/v1/ledger?kind=call.refused", operatorToken, nil)
	json.Unmarshal(res.Body, &page)
	if len(page.Entries) != 1 || page.Entries[0].Trace != "t-read2" {
		t.Fatalf("kind filter: %s", res.Body)
	}
	res = e.do("GET", "/v1/ledger?trace=t-read2", operatorToken, nil)
	json.Unmarshal(res.Body, &page)
	if len(page.Entries) != 1 {
		t.Fatalf("trace filter: %s", res.Body)
	}
	if res := e.do("GET", "/v1/ledger?limit=0", auditorToken, nil); res.Status != 400 {
		t.Errorf("limit=0: %d", res.Status)
	}

	var v struct {
		OK      bool   `json:"ok"`
		Entries int64  `json:"entries"`
		Head    string `json:"head"`
	}
	res = e.do("GET", "/v1/ledger/verify", auditorToken, nil)
	if err := json.Unmarshal(res.Body, &v); err != nil || !v.OK || v.Entries != page.Head.Seq || v.Head != page.Head.Hash {
		t.Fatalf("verify: %d %s (head %+v)", res.Status, res.Body, page.Head)
	}

	res = e.do("GET", "/v1/tools", agentToken, nil)
	for _, name := range []string{"get_time", "write_note", "post_announcement"} {
		if !strings.Contains(string(res.Body), `"name":"`+name+`"`) {
			t.Errorf("tools lack %s: %s", name, res.Body)
		}
	}
}

func TestMetrics(t *testing.T) {
	e := newEnv(t)
	e.call("t-m", "write_note", `{"title":"a","text":"b"}`)
	e.call("t-m", "write_note", `{"title":"a"}`)
	e.pending("t-m2", `{"channel":"ops","message":"HI"}`, custody.EPENDING)
	if res := e.do("GET", "/v1/ledger?trace=t-m2", auditorToken, nil); res.Status != 200 {
		t.Fatalf("ledger by trace: %d %s", res.Status, res.Body)
	}
	res := e.do("GET", "/metrics", "", nil)
	body := string(res.Body)
	for _, want := range []string{
		`custody_calls_total{tool="write_note",outcome="ok"} 1`,
		`custody_calls_total{tool="write_note",outcome="invalid"} 1`,
		`custody_calls_total{tool="post_announcement",outcome="pending_approval"} 1`,
		`custody_call_duration_seconds_count 3`,
		`custody_call_duration_seconds_bucket{le="+Inf"} 3`,
		"custody_ledger_entries 5", // started+succeeded, refused, refused+requested
		"custody_approvals_pending 1",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "custody_index_") {
		t.Errorf("metrics report a lookup index the store no longer has:\n%s", body)
	}
	// Every durable call commits at least once, its refusals included.
	before := commitsMetric(t, body)
	if before < 1 {
		t.Errorf("custody_ledger_commits_total %d after five entries", before)
	}
	e.call("t-m", "write_note", `{"title":"a","extra":1}`)
	if after := commitsMetric(t, string(e.do("GET", "/metrics", "", nil).Body)); after <= before {
		t.Errorf("custody_ledger_commits_total went from %d to %d over a refused call", before, after)
	}
	// The runtime's allocation counter only grows, and a call allocates.
	alloc := func() int64 {
		return metricValue(t, string(e.do("GET", "/metrics", "", nil).Body), "go_memstats_alloc_bytes_total")
	}
	a0 := alloc()
	e.call("t-m", "write_note", `{"title":"a","text":"b"}`)
	if a1 := alloc(); a0 <= 0 || a1 <= a0 {
		t.Errorf("go_memstats_alloc_bytes_total %d, then %d after a call", a0, a1)
	}
}

func metricValue(t *testing.T, body, name string) int64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + ` (\d+)$`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no %s in:\n%s", name, body)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

func commitsMetric(t *testing.T, body string) int64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^custody_ledger_commits_total (\d+)$`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no custody_ledger_commits_total in:\n%s", body)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
