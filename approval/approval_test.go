package approval_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/ledger"
	"github.com/custody-dev/custody/store/sqlite"

	"github.com/custody-dev/custody/internal/testclock"
)

// clock is a settable clock.
func newClock() *testclock.Clock {
	return testclock.New(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
}

// notifier records what it was told and fails when err is set.
type notifier struct {
	name string
	err  error
	mu   sync.Mutex
	got  []custody.Approval
}

func (n *notifier) Name() string { return n.name }

func (n *notifier) Notify(_ context.Context, a custody.Approval) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.got = append(n.got, a)
	return n.err
}

func (n *notifier) count() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.got)
}

type fixture struct {
	db  *sqlite.DB
	svc *approval.Service
	clk *testclock.Clock
}

func newFixture(t *testing.T, ns ...approval.Notifier) *fixture {
	t.Helper()
	db, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	clk := newClock()
	svc, err := approval.New(approval.Config{Store: db, Ledger: db, Notifiers: ns, Now: clk.Now})
	if err != nil {
		t.Fatalf("new service: %v", err)
	}
	return &fixture{db: db, svc: svc, clk: clk}
}

// size returns the ledger's size.
func (f *fixture) size(t *testing.T) int64 {
	t.Helper()
	h, err := f.db.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return h.Seq
}

var postArgs = json.RawMessage(`{"channel":"ops","message":"DEPLOY AT 5"}`)

func (f *fixture) request(t *testing.T, r approval.Request) custody.Approval {
	t.Helper()
	if r.Tool == "" {
		r.Tool, r.Args = "post_announcement", postArgs
	}
	if r.Trace == "" {
		r.Trace = "trace-1"
	}
	r.Editable = []string{"message"}
	a, err := f.svc.Request(context.Background(), r)
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	return a
}

func (f *fixture) entries(t *testing.T, kind string) []custody.Entry {
	t.Helper()
	es, err := f.db.Entries(context.Background(), custody.Query{Kind: kind})
	if err != nil {
		t.Fatalf("entries: %v", err)
	}
	return es
}

func wantKind(t *testing.T, err error, kind string) {
	t.Helper()
	if got := custody.ErrorKind(err); got != kind {
		t.Fatalf("error kind = %q (%v), want %q", got, err, kind)
	}
}

func TestRequest(t *testing.T) {
	f := newFixture(t)
	a := f.request(t, approval.Request{Requester: "agent-1", Reason: "post it"})
	if a.Status != custody.ApprovalPending {
		t.Errorf("status = %q, want pending", a.Status)
	}
	if id, err := uuid.Parse(a.ID); err != nil || id.Version() != 4 {
		t.Errorf("id %q is not a UUID v4", a.ID)
	}
	want, _ := ledger.ActionDigest("post_announcement", postArgs)
	if a.Digest != want {
		t.Errorf("digest = %s, want %s", a.Digest, want)
	}
	if !a.ExpiresAt.Equal(f.clk.Now().Add(approval.DefaultTTL)) {
		t.Errorf("expires_at = %v, want now + %v", a.ExpiresAt, approval.DefaultTTL)
	}
	if a.Channel != approval.ConsoleChannel {
		t.Errorf("channel = %q, want %q", a.Channel, approval.ConsoleChannel)
	}
	es := f.entries(t, custody.KindApprovalRequest)
	if len(es) != 1 || es[0].Refs[approval.RefApproval] != a.ID || es[0].Refs[approval.RefDigest] != a.Digest || es[0].Trace != "trace-1" {
		t.Fatalf("approval.requested entries = %+v", es)
	}
	got, err := f.svc.Get(context.Background(), a.ID)
	if err != nil || got.Status != custody.ApprovalPending {
		t.Fatalf("get = %+v, %v", got, err)
	}
	list, err := f.svc.List(context.Background(), custody.ApprovalPending)
	if err != nil || len(list) != 1 || list[0].ID != a.ID {
		t.Fatalf("list pending = %+v, %v", list, err)
	}
}

func TestRequestRefused(t *testing.T) {
	tests := []struct {
		name string
		r    approval.Request
	}{
		{"ErrNoTool", approval.Request{Args: postArgs}},
		{"ErrDuplicateKey", approval.Request{Tool: "t", Args: json.RawMessage(`{"a":1,"a":2}`)}},
		{"ErrBigInteger", approval.Request{Tool: "t", Args: json.RawMessage(`{"a":9007199254740993}`)}},
		{"ErrNotUUID", approval.Request{Tool: "t", Args: postArgs, ID: "approval-1"}},
		{"ErrUnknownChannel", approval.Request{Tool: "t", Args: postArgs, Channel: "carrier-pigeon"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			_, err := f.svc.Request(context.Background(), tt.r)
			wantKind(t, err, custody.EINVALID)
			if n := len(f.entries(t, "")); n != 0 {
				t.Errorf("%d entries written for a refused request", n)
			}
		})
	}
}

func TestRequestPreassignedID(t *testing.T) {
	f := newFixture(t)
	id := uuid.NewString()
	a := f.request(t, approval.Request{ID: id, TTL: time.Minute})
	if a.ID != id || !a.ExpiresAt.Equal(f.clk.Now().Add(time.Minute)) {
		t.Fatalf("approval = %+v", a)
	}
	_, err := f.svc.Request(context.Background(), approval.Request{Tool: "t", Args: postArgs, ID: id})
	wantKind(t, err, custody.ECONFLICT)
}

func TestDecide(t *testing.T) {
	edited := json.RawMessage(`{"channel":"ops","message":"DEPLOY AT 6"}`)
	tests := []struct {
		name    string
		d       approval.Decision
		advance time.Duration
		twice   bool
		kind    string
		status  custody.ApprovalStatus
		args    json.RawMessage
	}{
		{name: "OKApprove", d: approval.Decision{Decision: approval.Approve, Operator: "op-1", Note: "fine"}, status: custody.ApprovalApproved, args: postArgs},
		{name: "OKDecline", d: approval.Decision{Decision: approval.Decline, Operator: "op-1"}, status: custody.ApprovalDeclined, args: postArgs},
		{name: "OKEdit", d: approval.Decision{Decision: approval.Approve, Operator: "op-1", Arguments: edited}, status: custody.ApprovalApproved, args: edited},
		{name: "OKSameArguments", d: approval.Decision{Decision: approval.Approve, Operator: "op-1", Arguments: json.RawMessage(`{"message":"DEPLOY AT 5","channel":"ops"}`)}, status: custody.ApprovalApproved, args: postArgs},
		{name: "ErrNoOperator", d: approval.Decision{Decision: approval.Approve}, kind: custody.EINVALID},
		{name: "ErrUnknownDecision", d: approval.Decision{Decision: "maybe", Operator: "op-1"}, kind: custody.EINVALID},
		{name: "ErrEditNotEditable", d: approval.Decision{Decision: approval.Approve, Operator: "op-1", Arguments: json.RawMessage(`{"channel":"alerts","message":"DEPLOY AT 5"}`)}, kind: custody.EINVALID},
		{name: "ErrEditAddsArgument", d: approval.Decision{Decision: approval.Approve, Operator: "op-1", Arguments: json.RawMessage(`{"channel":"ops","message":"DEPLOY AT 5","pin":true}`)}, kind: custody.EINVALID},
		{name: "ErrEditNotString", d: approval.Decision{Decision: approval.Approve, Operator: "op-1", Arguments: json.RawMessage(`{"channel":"ops","message":5}`)}, kind: custody.EINVALID},
		{name: "ErrEditOnDecline", d: approval.Decision{Decision: approval.Decline, Operator: "op-1", Arguments: edited}, kind: custody.EINVALID},
		{name: "ErrExpired", d: approval.Decision{Decision: approval.Approve, Operator: "op-1"}, advance: approval.DefaultTTL, kind: custody.EEXPIRED},
		{name: "ErrAlreadyDecided", d: approval.Decision{Decision: approval.Approve, Operator: "op-1"}, twice: true, kind: custody.ECONFLICT},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			a := f.request(t, approval.Request{})
			f.clk.Add(tt.advance)
			if tt.twice {
				if _, err := f.svc.Decide(ctx, a.ID, tt.d); err != nil {
					t.Fatalf("first decision: %v", err)
				}
			}
			got, err := f.svc.Decide(ctx, a.ID, tt.d)
			if tt.kind != "" {
				wantKind(t, err, tt.kind)
				if n := len(f.entries(t, custody.KindApprovalDecided)); n != btoi(tt.twice) {
					t.Errorf("%d approval.decided entries, want %d", n, btoi(tt.twice))
				}
				return
			}
			if err != nil {
				t.Fatalf("decide: %v", err)
			}
			want, _ := ledger.ActionDigest("post_announcement", tt.args)
			if got.Status != tt.status || got.Operator != "op-1" || got.DecidedAt == nil || got.Digest != want {
				t.Fatalf("decided = %+v, want status %s and digest %s", got, tt.status, want)
			}
			es := f.entries(t, custody.KindApprovalDecided)
			if len(es) != 1 || es[0].Actor != "op-1" || es[0].Refs[approval.RefDigest] != want {
				t.Fatalf("approval.decided entries = %+v", es)
			}
			var body struct {
				Decision        string          `json:"decision"`
				Operator        string          `json:"operator_id"`
				Arguments       json.RawMessage `json:"arguments"`
				Digest          string          `json:"action_digest"`
				RequestedDigest string          `json:"requested_digest"`
			}
			if err := json.Unmarshal(es[0].Body, &body); err != nil {
				t.Fatal(err)
			}
			if body.Decision != string(tt.status) || body.Operator != "op-1" || body.Digest != want || body.RequestedDigest != a.Digest {
				t.Errorf("decision body = %s", es[0].Body)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestDecideNotFound(t *testing.T) {
	f := newFixture(t)
	_, err := f.svc.Decide(context.Background(), uuid.NewString(), approval.Decision{Decision: approval.Approve, Operator: "op-1"})
	wantKind(t, err, custody.ENOTFOUND)
}

func TestConsume(t *testing.T) {
	other, _ := ledger.ActionDigest("post_announcement", json.RawMessage(`{"channel":"ops","message":"OTHER"}`))
	tests := []struct {
		name     string
		decision string // "" leaves the request pending
		advance  time.Duration
		digest   string // "" means the request's own
		twice    bool
		kind     string
	}{
		{name: "OK", decision: approval.Approve},
		{name: "ErrReplay", decision: approval.Approve, twice: true, kind: custody.ECONFLICT},
		{name: "ErrOtherAction", decision: approval.Approve, digest: other, kind: custody.EDENIED},
		{name: "ErrDeclined", decision: approval.Decline, kind: custody.EDENIED},
		{name: "ErrPending", kind: custody.EPENDING},
		{name: "ErrExpired", decision: approval.Approve, advance: approval.DefaultTTL, kind: custody.EEXPIRED},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			a := f.request(t, approval.Request{})
			if tt.decision != "" {
				if _, err := f.svc.Decide(ctx, a.ID, approval.Decision{Decision: tt.decision, Operator: "op-1"}); err != nil {
					t.Fatal(err)
				}
			}
			f.clk.Add(tt.advance)
			digest := a.Digest
			if tt.digest != "" {
				digest = tt.digest
			}
			if tt.twice {
				if _, err := f.svc.Consume(ctx, a.ID, digest, useEntry(a)); err != nil {
					t.Fatalf("first consume: %v", err)
				}
			}
			size := f.size(t)
			e, err := f.svc.Consume(ctx, a.ID, digest, useEntry(a))
			if tt.kind != "" {
				wantKind(t, err, tt.kind)
				var ce *custody.Error
				if errors.As(err, &ce) && ce.ApprovalRequestID != a.ID {
					t.Errorf("error names approval %q, want %q", ce.ApprovalRequestID, a.ID)
				}
				if got := f.size(t); got != size {
					t.Errorf("a refused use wrote %d entries", got-size)
				}
				return
			}
			got, gerr := f.svc.Get(ctx, a.ID)
			if err != nil || gerr != nil || got.Status != custody.ApprovalConsumed || got.ConsumedSeq != e.Seq || e.Seq == 0 {
				t.Fatalf("consume = entry %d, %+v, %v, %v; want consumed by the entry", e.Seq, got, err, gerr)
			}
		})
	}
}

// useEntry is the entry of an action that uses a.
func useEntry(a custody.Approval) custody.Entry {
	return custody.Entry{Kind: custody.KindCallStarted, Trace: a.Trace, Actor: a.Requester,
		Refs: map[string]string{approval.RefApproval: a.ID}, Body: json.RawMessage(`{"tool":"post_announcement"}`)}
}

func TestConsumeOnceUnderRace(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.request(t, approval.Request{})
	if _, err := f.svc.Decide(ctx, a.ID, approval.Decision{Decision: approval.Approve, Operator: "op-1"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for range 8 {
		wg.Go(func() {
			if _, err := f.svc.Consume(ctx, a.ID, a.Digest, useEntry(a)); err == nil {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d consumers won, want exactly 1", wins)
	}
	if es, err := f.db.Entries(ctx, custody.Query{Kind: custody.KindCallStarted}); err != nil || len(es) != 1 {
		t.Fatalf("%d entries of a use, %v; want the winner's alone", len(es), err)
	}
}

// sweep runs one sweep and wants it to expire n requests.
func (f *fixture) sweep(t *testing.T, n int) {
	t.Helper()
	if got, err := f.svc.ExpireDue(context.Background()); err != nil || got != n {
		t.Fatalf("sweep expired %d (%v), want %d", got, err, n)
	}
}

// TestExpireDueEscalates: a pending request escalates to the next channel
// at half its lifetime and to the one after at three quarters, while an
// operator can still act on it; once it expires nobody is paged about it.
func TestExpireDueEscalates(t *testing.T) {
	sms, pager := &notifier{name: "sms"}, &notifier{name: "pager"}
	f := newFixture(t, sms, pager)
	ctx := context.Background()
	console := f.request(t, approval.Request{})
	last := f.request(t, approval.Request{Channel: "pager", TTL: 10 * time.Minute})
	decided := f.request(t, approval.Request{})
	if _, err := f.svc.Decide(ctx, decided.ID, approval.Decision{Decision: approval.Approve, Operator: "op-1"}); err != nil {
		t.Fatal(err)
	}
	if pager.count() != 1 || sms.count() != 0 {
		t.Fatalf("notified sms %d, pager %d times; want 0 and 1", sms.count(), pager.count())
	}

	f.clk.Add(approval.DefaultTTL/2 - time.Second)
	f.sweep(t, 0)
	if sms.count() != 0 {
		t.Fatal("escalated before half the lifetime")
	}
	f.clk.Add(time.Second)
	f.sweep(t, 0)
	f.sweep(t, 0) // a second sweep at the same time pages nobody again
	got, _ := f.svc.Get(ctx, console.ID)
	if got.Status != custody.ApprovalPending || got.Channel != "sms" || got.Escalations != 1 {
		t.Fatalf("at half its lifetime the request is %+v, want pending, escalated once to sms", got)
	}
	if sms.count() != 1 || sms.got[0].ID != console.ID || !f.clk.Now().Before(sms.got[0].ExpiresAt) {
		t.Fatalf("sms was told %d times, want once about the request while it is pending", sms.count())
	}

	f.clk.Add(approval.DefaultTTL / 4)
	f.sweep(t, 0)
	if got, _ := f.svc.Get(ctx, console.ID); got.Status != custody.ApprovalPending || got.Channel != "pager" || got.Escalations != 2 || pager.count() != 2 {
		t.Fatalf("at three quarters the request is %+v (pager told %d times), want pending on pager", got, pager.count())
	}

	f.clk.Add(approval.DefaultTTL / 4)
	f.sweep(t, 1)
	if got, _ := f.svc.Get(ctx, console.ID); got.Status != custody.ApprovalExpired || sms.count() != 1 || pager.count() != 2 {
		t.Fatalf("at expiry: %+v, sms told %d, pager %d times; want expired and nobody paged", got, sms.count(), pager.count())
	}
	if d, _ := f.svc.Get(ctx, decided.ID); d.Status != custody.ApprovalApproved {
		t.Errorf("a decided request changed to %q", d.Status)
	}

	f.clk.Add(10 * time.Minute)
	f.sweep(t, 1)
	if got, _ := f.svc.Get(ctx, last.ID); got.Status != custody.ApprovalExpired || got.Escalations != 0 || got.Channel != "pager" {
		t.Fatalf("request on the last channel = %+v, want expired without escalation", got)
	}
	if n := len(f.entries(t, custody.KindApprovalExpired)); n != 2 {
		t.Errorf("%d approval.expired entries, want 2", n)
	}
	es := f.entries(t, custody.KindApprovalEscalate)
	if len(es) != 2 || es[0].Refs[approval.RefApproval] != console.ID || es[1].Refs[approval.RefApproval] != console.ID {
		t.Fatalf("approval.escalated entries = %+v", es)
	}
	_, err := f.svc.Decide(ctx, console.ID, approval.Decision{Decision: approval.Approve, Operator: "op-1"})
	wantKind(t, err, custody.ECONFLICT)
}

// TestEscalatedRequestCanBeDecided: the channel an escalation pages can
// still approve the request.
func TestEscalatedRequestCanBeDecided(t *testing.T) {
	sms := &notifier{name: "sms"}
	f := newFixture(t, sms)
	a := f.request(t, approval.Request{})
	f.clk.Add(approval.DefaultTTL * 3 / 5)
	f.sweep(t, 0)
	if sms.count() != 1 {
		t.Fatalf("sms told %d times, want 1", sms.count())
	}
	if _, err := f.svc.Decide(context.Background(), a.ID, approval.Decision{Decision: approval.Approve, Operator: "op-1"}); err != nil {
		t.Fatalf("the escalated request could not be approved: %v", err)
	}
}

// TestEscalateAtConfigured: the share of the lifetime is configurable, and
// a share outside (0, 1) is refused.
func TestEscalateAtConfigured(t *testing.T) {
	sms := &notifier{name: "sms"}
	f := newFixture(t)
	svc, err := approval.New(approval.Config{Store: f.db, Ledger: f.db, Notifiers: []approval.Notifier{sms}, Now: f.clk.Now, EscalateAt: 0.8})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Request(context.Background(), approval.Request{Tool: "post_announcement", Args: postArgs, Trace: "t"}); err != nil {
		t.Fatal(err)
	}
	f.clk.Add(approval.DefaultTTL*4/5 - time.Second)
	if _, err := svc.ExpireDue(context.Background()); err != nil || sms.count() != 0 {
		t.Fatalf("escalated before 0.8 of the lifetime (%v)", err)
	}
	f.clk.Add(time.Second)
	if _, err := svc.ExpireDue(context.Background()); err != nil || sms.count() != 1 {
		t.Fatalf("not escalated at 0.8 of the lifetime (%v)", err)
	}
	for _, share := range []float64{-0.5, 1, 1.5} {
		if _, err := approval.New(approval.Config{Store: f.db, Ledger: f.db, EscalateAt: share}); err == nil {
			t.Errorf("escalate at %v accepted", share)
		}
	}
}

// TestEscalateOnceAcrossServices: services sharing a store sweep at once;
// each escalation is made, and paged, once.
func TestEscalateOnceAcrossServices(t *testing.T) {
	sms := &notifier{name: "sms"}
	f := newFixture(t)
	var svcs []*approval.Service
	for range 4 {
		svc, err := approval.New(approval.Config{Store: f.db, Ledger: f.db, Notifiers: []approval.Notifier{sms}, Now: f.clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		svcs = append(svcs, svc)
	}
	const n = 10
	for range n {
		if _, err := svcs[0].Request(context.Background(), approval.Request{Tool: "post_announcement", Args: postArgs, Trace: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	f.clk.Add(approval.DefaultTTL / 2)
	var wg sync.WaitGroup
	for _, svc := range svcs {
		wg.Go(func() {
			if _, err := svc.ExpireDue(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if sms.count() != n || len(f.entries(t, custody.KindApprovalEscalate)) != n {
		t.Fatalf("sms told %d times, %d escalation entries; want %d of each", sms.count(), len(f.entries(t, custody.KindApprovalEscalate)), n)
	}
}

func TestNotifierFailureKeepsPending(t *testing.T) {
	sms := &notifier{name: "sms", err: errors.New("gateway down")}
	f := newFixture(t, sms)
	a := f.request(t, approval.Request{Channel: "sms"})
	if a.Status != custody.ApprovalPending {
		t.Fatalf("status = %q, want pending", a.Status)
	}
	got, _ := f.svc.Get(context.Background(), a.ID)
	if got.Status != custody.ApprovalPending {
		t.Fatalf("stored status = %q, want pending", got.Status)
	}
	es := f.entries(t, custody.KindNotifyFailed)
	if len(es) != 1 || es[0].Refs[approval.RefApproval] != a.ID {
		t.Fatalf("notify.failed entries = %+v", es)
	}
	var body struct {
		Channel string `json:"channel"`
		Error   string `json:"error"`
	}
	if err := json.Unmarshal(es[0].Body, &body); err != nil || body.Channel != "sms" || body.Error != "gateway down" {
		t.Fatalf("notify.failed body = %s", es[0].Body)
	}
}

func TestRunSweeps(t *testing.T) {
	f := newFixture(t)
	a := f.request(t, approval.Request{})
	f.clk.Add(approval.DefaultTTL)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.svc.Run(ctx, 5*time.Millisecond); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, _ := f.svc.Get(context.Background(), a.ID)
		if got.Status == custody.ApprovalExpired {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Run did not expire the request")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
}

func TestNew(t *testing.T) {
	db, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tests := []struct {
		name string
		cfg  approval.Config
	}{
		{"ErrNoStore", approval.Config{Ledger: db}},
		{"ErrNoLedger", approval.Config{Store: db}},
		{"ErrNotifierNamedConsole", approval.Config{Store: db, Ledger: db, Notifiers: []approval.Notifier{&notifier{name: approval.ConsoleChannel}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := approval.New(tt.cfg); err == nil {
				t.Fatal("New accepted an unusable configuration")
			}
		})
	}
}

func TestCheckEdit(t *testing.T) {
	orig := json.RawMessage(`{"a":"x","b":"y","n":1}`)
	tests := []struct {
		name   string
		edited string
		ok     bool
	}{
		{"OK", `{"a":"z","b":"y","n":1}`, true},
		{"OKReordered", `{"n":1.0,"b":"y","a":"x"}`, true},
		{"ErrNotEditable", `{"a":"x","b":"z","n":1}`, false},
		{"ErrRemoved", `{"b":"y","n":1}`, false},
		{"ErrNotObject", `["a"]`, false},
		{"ErrDuplicateKey", `{"a":"z","a":"w","b":"y","n":1}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := approval.CheckEdit(orig, json.RawMessage(tt.edited), []string{"a"})
			if (err == nil) != tt.ok {
				t.Fatalf("CheckEdit = %v, want ok %v", err, tt.ok)
			}
			if err != nil {
				wantKind(t, err, custody.EINVALID)
			}
		})
	}
}
