package gate_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/ledger"
)

const post = `{"channel":"ops","message":"DEPLOY AT 5"}`

func (h *harness) decide(t testing.TB, id, decision string, args json.RawMessage) custody.Approval {
	t.Helper()
	a, err := h.svc.Decide(context.Background(), id, approval.Decision{Decision: decision, Operator: "op-1", Arguments: args})
	if err != nil {
		t.Fatalf("decide %s: %v", id, err)
	}
	return a
}

// pending calls the tool and returns the approval the refusal names.
func (h *harness) pending(t testing.TB, trace, tool, args string) string {
	t.Helper()
	_, err := h.call(trace, tool, args)
	h.wantRefused(t, err, custody.EPENDING)
	ce := wantKind(t, err, custody.EPENDING)
	if ce.ApprovalRequestID == "" || ce.ExpiresAt.IsZero() {
		t.Fatalf("pending error names no approval: %+v", ce)
	}
	return ce.ApprovalRequestID
}

func TestApprovalMissingCreatesRequest(t *testing.T) {
	h := newHarness(t)
	id := h.pending(t, "trace-p", "post_announcement", post)
	a, err := h.svc.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	digest, _ := ledger.ActionDigest("post_announcement", json.RawMessage(post))
	if a.Status != custody.ApprovalPending || a.Digest != digest || a.Trace != "trace-p" || a.Requester != "agent-1" || a.Reason == "" || len(a.Editable) != 1 {
		t.Fatalf("approval = %+v", a)
	}
	if es := h.entries(t, custody.Query{Trace: "trace-p", Kind: custody.KindApprovalRequest}); len(es) != 1 {
		t.Fatalf("%d approval.requested entries, want 1", len(es))
	}
	refused := h.entries(t, custody.Query{Trace: "trace-p", Kind: custody.KindCallRefused})
	if len(refused) != 1 || refused[0].Refs[approval.RefApproval] != id {
		t.Fatalf("refusal entries = %+v, want one citing %s", refused, id)
	}

	again := h.pending(t, "trace-p", "post_announcement", post)
	if again != id {
		t.Fatalf("still pending reported %s, want the same request %s", again, id)
	}
	if as, _ := h.svc.List(context.Background(), custody.ApprovalPending); len(as) != 1 {
		t.Fatalf("%d pending approvals, want 1: no duplicates", len(as))
	}
	if h.ran("post_announcement") != 0 {
		t.Fatal("a held action ran")
	}
}

func TestApprovedRunsOnce(t *testing.T) {
	h := newHarness(t)
	id := h.pending(t, "trace-a", "post_announcement", post)
	h.decide(t, id, approval.Approve, nil)

	res, err := h.call("trace-a", "post_announcement", `{"message":"DEPLOY AT 5","channel":"ops"}`)
	if err != nil {
		t.Fatalf("approved call: %v", err)
	}
	var out struct{ Message string }
	if err := json.Unmarshal(res.Output, &out); err != nil || out.Message != "DEPLOY AT 5" {
		t.Fatalf("output = %s", res.Output)
	}
	started := h.entries(t, custody.Query{Trace: "trace-a", Kind: custody.KindCallStarted})
	if len(started) != 1 || started[0].Refs[approval.RefApproval] != id {
		t.Fatalf("intent entries = %+v", started)
	}
	a, _ := h.svc.Get(context.Background(), id)
	if a.Status != custody.ApprovalConsumed || a.ConsumedSeq != started[0].Seq {
		t.Fatalf("approval = %+v, want consumed by seq %d", a, started[0].Seq)
	}
	if e := h.entry(t, res.Receipt.Seq); e.Refs[approval.RefApproval] != id || e.Refs["announcement_id"] == "" {
		t.Errorf("outcome refs = %v", e.Refs)
	}

	_, err = h.call("trace-a", "post_announcement", post)
	h.wantRefused(t, err, custody.ECONFLICT)
	if h.ran("post_announcement") != 1 {
		t.Fatalf("the action ran %d times, want 1", h.ran("post_announcement"))
	}
	h.verify(t)
}

func TestApprovalRefusals(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t testing.TB, h *harness, id string)
		args    string
		kind    string
		// newRequest says the refusal names a new approval request.
		newRequest bool
	}{
		{name: "ErrDeclined", prepare: func(t testing.TB, h *harness, id string) { h.decide(t, id, approval.Decline, nil) }, args: post, kind: custody.EDENIED},
		{name: "ErrApprovedButExpired", prepare: func(t testing.TB, h *harness, id string) {
			h.decide(t, id, approval.Approve, nil)
			h.clk.Add(approval.DefaultTTL)
		}, args: post, kind: custody.EEXPIRED, newRequest: true},
		{name: "ErrPendingExpired", prepare: func(_ testing.TB, h *harness, _ string) { h.clk.Add(approval.DefaultTTL + time.Second) }, args: post, kind: custody.EEXPIRED, newRequest: true},
		{name: "ErrOtherArguments", prepare: func(t testing.TB, h *harness, id string) { h.decide(t, id, approval.Approve, nil) },
			args: `{"channel":"alerts","message":"DEPLOY AT 5"}`, kind: custody.EPENDING, newRequest: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			id := h.pending(t, "trace-r", "post_announcement", post)
			tt.prepare(t, h, id)
			_, err := h.call("trace-r", "post_announcement", tt.args)
			h.wantRefused(t, err, tt.kind)
			ce := wantKind(t, err, tt.kind)
			if got := ce.ApprovalRequestID != id; got != tt.newRequest {
				t.Errorf("refusal names approval %s (first %s); want a new one: %v", ce.ApprovalRequestID, id, tt.newRequest)
			}
			if h.ran("post_announcement") != 0 {
				t.Fatal("the action ran")
			}
		})
	}
}

func TestOperatorEditedArguments(t *testing.T) {
	h := newHarness(t)
	id := h.pending(t, "trace-e", "post_announcement", post)
	edited := `{"channel":"ops","message":"DEPLOY AT 6"}`
	h.decide(t, id, approval.Approve, json.RawMessage(edited))

	_, err := h.call("trace-e", "post_announcement", post)
	if e := h.wantRefused(t, err, custody.EDENIED); e.Refs[approval.RefApproval] != id {
		t.Errorf("refusal refs = %v, want the approval", e.Refs)
	}
	if ce := wantKind(t, err, custody.EDENIED); ce.ApprovalRequestID != id {
		t.Errorf("refusal names %s, want %s", ce.ApprovalRequestID, id)
	}
	res, err := h.call("trace-e", "post_announcement", edited)
	if err != nil {
		t.Fatalf("edited call: %v", err)
	}
	if e := h.entry(t, res.Receipt.Seq); string(bodyArgs(e)) != edited {
		t.Errorf("ran with %s, want the edited %s", bodyArgs(e), edited)
	}
	_, err = h.call("trace-e", "post_announcement", post)
	h.wantRefused(t, err, custody.EDENIED)
	if h.ran("post_announcement") != 1 {
		t.Fatalf("ran %d times, want 1", h.ran("post_announcement"))
	}
}

// TestNamedApproval covers a tool whose call cites its approval: the
// citation is left out of the digest, and the cited approval must be the
// one for these arguments.
func TestNamedApproval(t *testing.T) {
	h := newHarness(t)
	id := h.pending(t, "trace-n", "sign", `{"message":"SLOW DOWN"}`)
	cite := func(msg string) string { return `{"message":"` + msg + `","approval_request_id":"` + id + `"}` }

	_, err := h.call("trace-n", "sign", cite("SLOW DOWN"))
	h.wantRefused(t, err, custody.EPENDING)

	h.decide(t, id, approval.Approve, nil)
	_, err = h.call("trace-n", "sign", cite("SPEED UP"))
	h.wantRefused(t, err, custody.EDENIED)

	_, err = h.call("trace-n", "sign", `{"message":"SLOW DOWN","approval_request_id":"8d4f8a70-3c1a-4f57-a8a4-1c2b3d4e5f60"}`)
	h.wantRefused(t, err, custody.EDENIED)

	res, err := h.call("trace-n", "sign", cite("SLOW DOWN"))
	if err != nil {
		t.Fatalf("cited call: %v", err)
	}
	if e := h.entry(t, res.Receipt.Seq); e.Refs[approval.RefApproval] != id {
		t.Errorf("refs = %v", e.Refs)
	}
	_, err = h.call("trace-n", "sign", cite("SLOW DOWN"))
	h.wantRefused(t, err, custody.ECONFLICT)
	if h.ran("sign") != 1 {
		t.Fatalf("sign ran %d times, want 1", h.ran("sign"))
	}
}

func TestApprovalExpiredNamed(t *testing.T) {
	h := newHarness(t)
	id := h.pending(t, "trace-x", "sign", `{"message":"SLOW DOWN"}`)
	h.decide(t, id, approval.Approve, nil)
	h.clk.Add(approval.DefaultTTL)
	_, err := h.call("trace-x", "sign", `{"message":"SLOW DOWN","approval_request_id":"`+id+`"}`)
	h.wantRefused(t, err, custody.EEXPIRED)
}

func TestApprovedActionRunsOnceUnderRace(t *testing.T) {
	h := newHarness(t)
	id := h.pending(t, "trace-race", "post_announcement", post)
	h.decide(t, id, approval.Approve, nil)
	var wg sync.WaitGroup
	kinds := make([]string, 8)
	for i := range kinds {
		wg.Go(func() {
			_, err := h.call("trace-race", "post_announcement", post)
			kinds[i] = custody.ErrorKind(err)
		})
	}
	wg.Wait()
	ran := 0
	for _, k := range kinds {
		switch k {
		case "":
			ran++
		case custody.ECONFLICT:
		default:
			t.Errorf("a concurrent replay got %q, want conflict", k)
		}
	}
	if ran != 1 || h.ran("post_announcement") != 1 {
		t.Fatalf("%d calls succeeded and the handler ran %d times, want 1 and 1", ran, h.ran("post_announcement"))
	}
	h.verify(t)
}

// pager records the approvals it is told about.
type pager struct {
	mu  sync.Mutex
	ids []string
}

func (p *pager) Name() string { return "pager" }

func (p *pager) Notify(_ context.Context, a custody.Approval) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ids = append(p.ids, a.ID)
	return nil
}

// TestAskAgainAfterEscalation checks that once a request escalated and
// then expired, the next call asks on the escalated channel.
func TestAskAgainAfterEscalation(t *testing.T) {
	p := &pager{}
	h := newHarness(t, p)
	first := h.pending(t, "trace-esc", "post_announcement", post)
	h.clk.Add(approval.DefaultTTL / 2)
	if n, err := h.svc.ExpireDue(context.Background()); err != nil || n != 0 {
		t.Fatalf("ExpireDue at half the lifetime = %d, %v", n, err)
	}
	h.clk.Add(approval.DefaultTTL / 2)
	if n, err := h.svc.ExpireDue(context.Background()); err != nil || n != 1 {
		t.Fatalf("ExpireDue = %d, %v", n, err)
	}
	_, err := h.call("trace-esc", "post_announcement", post)
	ce := wantKind(t, err, custody.EEXPIRED)
	if ce.ApprovalRequestID == first {
		t.Fatal("no new request after expiry")
	}
	a, _ := h.svc.Get(context.Background(), ce.ApprovalRequestID)
	if a.Status != custody.ApprovalPending || a.Channel != "pager" {
		t.Fatalf("new request = %+v, want pending on the pager", a)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.ids) != 2 || p.ids[0] != first || p.ids[1] != a.ID {
		t.Fatalf("pager told about %v, want the escalation then the new request", p.ids)
	}
}

// TestApprovalRaceLeavesNoIntent checks that the calls that lose the race
// for one approval leave no call.started on the ledger: the approval is
// used in the same commit as the winner's intent.
func TestApprovalRaceLeavesNoIntent(t *testing.T) {
	h := newHarness(t)
	id := h.pending(t, "trace-race", "post_announcement", post)
	h.decide(t, id, approval.Approve, nil)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { _, _ = h.call("trace-race", "post_announcement", post) })
	}
	wg.Wait()
	started := h.entries(t, custody.Query{Trace: "trace-race", Kind: custody.KindCallStarted})
	if len(started) != 1 {
		t.Fatalf("%d call.started entries, want 1: only the call that used the approval", len(started))
	}
	a, err := h.svc.Get(context.Background(), id)
	if err != nil || a.ConsumedSeq != started[0].Seq {
		t.Fatalf("approval = %+v, %v; want consumed by the call.started at seq %d", a, err, started[0].Seq)
	}
	refused := h.entries(t, custody.Query{Trace: "trace-race", Kind: custody.KindCallRefused})
	conflicts := 0
	for _, e := range refused {
		if k, _ := bodyError(e); k == custody.ECONFLICT {
			conflicts++
		}
	}
	if conflicts != 7 {
		t.Fatalf("%d conflict refusals on the ledger, want 7", conflicts)
	}
}

func (h *harness) callAs(actor, trace, tool, args string) (custody.Result, error) {
	return h.gw.Call(context.Background(), custody.Call{Trace: trace, Tool: tool, Args: json.RawMessage(args), Actor: actor, Via: "test"})
}

// TestApprovalBoundToRequester checks that an approval authorises only
// the agent that asked for it, whether another agent names its trace or
// cites the approval, and that the ledger records who asked.
func TestApprovalBoundToRequester(t *testing.T) {
	h := newHarness(t)
	id := h.pending(t, "trace-bot", "post_announcement", post)
	h.decide(t, id, approval.Approve, nil)
	req := h.entries(t, custody.Query{Trace: "trace-bot", Kind: custody.KindApprovalRequest})
	if len(req) != 1 || req[0].Actor != "agent-1" {
		t.Fatalf("approval.requested entries = %+v, want one by agent-1", req)
	}

	_, err := h.callAs("agent-2", "trace-bot", "post_announcement", post)
	ce := wantKind(t, err, custody.EDENIED)
	if ce.ApprovalRequestID != id {
		t.Errorf("refusal names approval %q, want %s", ce.ApprovalRequestID, id)
	}
	h.wantRefused(t, err, custody.EDENIED)

	signID := h.pending(t, "trace-sign", "sign", `{"message":"SLOW DOWN"}`)
	h.decide(t, signID, approval.Approve, nil)
	_, err = h.callAs("agent-2", "trace-sign", "sign", `{"message":"SLOW DOWN","approval_request_id":"`+signID+`"}`)
	h.wantRefused(t, err, custody.EDENIED)
	_, err = h.callAs("agent-2", "trace-sign", "sign", `{"message":"SLOW DOWN"}`)
	h.wantRefused(t, err, custody.EDENIED)
	if h.ran("post_announcement") != 0 || h.ran("sign") != 0 {
		t.Fatal("another agent's call ran on an approval it did not ask for")
	}

	if _, err := h.call("trace-bot", "post_announcement", post); err != nil {
		t.Fatalf("the requester's call: %v", err)
	}
	if _, err := h.call("trace-sign", "sign", `{"message":"SLOW DOWN","approval_request_id":"`+signID+`"}`); err != nil {
		t.Fatalf("the requester's cited call: %v", err)
	}
}

// TestApprovalServesEveryTraceOfItsAgent: an approval belongs to the agent
// that asked, the exact action and the tool definition, not to the trace
// it was asked in: a client that restarts (a new MCP session is a new
// trace) finds it, pending or approved, still once only, whether it cites
// it or not. (It used to be bound to its trace too, and so stranded by a
// restart: TestApprovedRunsOnce and TestNamedApproval asserted that.)
// Another agent still never uses it, and what ended in one trace does not
// hold up a new request in another.
func TestApprovalServesEveryTraceOfItsAgent(t *testing.T) {
	h := newHarness(t)
	id := h.pending(t, "session-1", "post_announcement", post)
	if again := h.pending(t, "session-2", "post_announcement", post); again != id {
		t.Fatalf("a new session reports approval %s, want the pending %s", again, id)
	}
	h.decide(t, id, approval.Approve, nil)
	_, err := h.callAs("agent-2", "session-3", "post_announcement", post)
	if ce := wantKind(t, err, custody.EPENDING); ce.ApprovalRequestID == id {
		t.Fatalf("another agent's call reports approval %s: it may never use it", id)
	}
	res, err := h.call("session-2", "post_announcement", post)
	if err != nil {
		t.Fatalf("the approved call from another session of the agent: %v", err)
	}
	if e := h.entry(t, res.Receipt.Seq); e.Refs[approval.RefApproval] != id || e.Trace != "session-2" {
		t.Errorf("outcome %+v, want trace session-2 citing %s", e, id)
	}
	_, err = h.call("session-1", "post_announcement", post)
	h.wantRefused(t, err, custody.ECONFLICT)
	if h.ran("post_announcement") != 1 {
		t.Fatalf("ran %d times, want once", h.ran("post_announcement"))
	}
	// Used in session 2, it answers for nothing in session 4: the same
	// action asked again is a new request.
	if next := h.pending(t, "session-4", "post_announcement", post); next == id {
		t.Fatalf("session 4 reports the used approval %s, want a new request", id)
	}

	signID := h.pending(t, "session-1", "sign", `{"message":"SLOW DOWN"}`)
	h.decide(t, signID, approval.Approve, nil)
	cite := `{"message":"SLOW DOWN","approval_request_id":"` + signID + `"}`
	if _, err := h.call("session-5", "sign", cite); err != nil {
		t.Fatalf("a cited approval from another session of the agent: %v", err)
	}
	_, err = h.call("session-1", "sign", cite)
	h.wantRefused(t, err, custody.ECONFLICT)
}
