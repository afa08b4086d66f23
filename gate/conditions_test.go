package gate_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/internal/testclock"
	"github.com/custody-dev/custody/store/sqlite"
)

// ruled is a gateway over a real SQLite store offering one tool whose
// policy is under test, with a clock the test moves.
type ruled struct {
	db   *sqlite.DB
	svc  *approval.Service
	gw   *gate.Gateway
	clk  *testclock.Clock
	mu   sync.Mutex
	runs int
}

// newRuled offers tool "t", a READ tool over the test contract's args
// ({n integer, s string, ...}), with spec's conditions and rates.
func newRuled(t testing.TB, conds []custody.Condition, rates []custody.Rate, groups func(string) []string) *ruled {
	t.Helper()
	r := &ruled{clk: testclock.New(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))}
	var err error
	if r.db, err = sqlite.Open(context.Background(), t.TempDir(), sqlite.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.db.Close() })
	reg := loadRegistry(t)
	validate := func(ctx context.Context, a custody.Approval) error { return r.gw.CheckApproval(ctx, a) }
	if r.svc, err = approval.New(approval.Config{Store: r.db, Ledger: r.db, Now: r.clk.Now, Validate: validate}); err != nil {
		t.Fatal(err)
	}
	s := spec("t", custody.Read)
	s.Conditions, s.Rates = conds, rates
	handler := func(ctx context.Context, c custody.Call) (json.RawMessage, error) {
		r.mu.Lock()
		r.runs++
		r.mu.Unlock()
		return ok(ctx, c)
	}
	r.gw, err = gate.New(gate.Config{Registry: reg, Ledger: r.db, Approvals: r.svc, State: r.db, Now: r.clk.Now,
		Logger: discard(), Groups: groups}, "rules-test", []gate.Tool{{Spec: s, Handler: handler}})
	if err != nil {
		t.Fatalf("new gateway: %v", err)
	}
	return r
}

func (r *ruled) call(actor, trace, args string) error {
	_, err := r.gw.Call(context.Background(), custody.Call{Trace: trace, Tool: "t", Args: json.RawMessage(args), Actor: actor, Via: "test"})
	return err
}

func (r *ruled) ran() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs
}

// refusedBy checks that err is a denial naming expr, recorded on the
// call.refused entry its receipt names, with expr among its violations.
func (r *ruled) refusedBy(t *testing.T, err error, kind, expr string) {
	t.Helper()
	ce := wantKind(t, err, kind)
	if !strings.Contains(ce.Message, expr) {
		t.Errorf("message %q does not name the expression %s", ce.Message, expr)
	}
	if ce.Receipt == nil {
		t.Fatal("the refusal has no receipt")
	}
	es, qerr := r.db.Entries(context.Background(), custody.Query{After: ce.Receipt.Seq - 1, Limit: 1})
	if qerr != nil || len(es) != 1 || es[0].Kind != custody.KindCallRefused {
		t.Fatalf("entry %d: %v %v, want call.refused", ce.Receipt.Seq, es, qerr)
	}
	_, vs := bodyError(es[0])
	for _, v := range vs {
		if strings.Contains(v.Message, expr) {
			return
		}
	}
	t.Errorf("the ledger's refusal %s does not record the expression %s", es[0].Body, expr)
}

func cond(when custody.When, expr string) custody.Condition {
	return custody.Condition{When: when, Expr: expr, Source: "/tools/t/" + string(when)}
}

// TestDenyWhenArgs: denyWhen over the arguments refuses the calls it
// holds for, and only them.
func TestDenyWhenArgs(t *testing.T) {
	r := newRuled(t, []custody.Condition{cond(custody.DenyWhen, "args.n > 100")}, nil, nil)
	if err := r.call("ann", "t1", `{"n":5}`); err != nil {
		t.Fatalf("n=5: %v", err)
	}
	r.refusedBy(t, r.call("ann", "t1", `{"n":101}`), custody.EDENIED, "args.n > 100")
	if r.ran() != 1 {
		t.Fatalf("ran %d calls, want 1", r.ran())
	}
}

// TestAllowWhenAgent: allowWhen over the agent's id and groups.
func TestAllowWhenAgent(t *testing.T) {
	groups := func(actor string) []string {
		if actor == "bob" {
			return []string{"ops"}
		}
		return nil
	}
	expr := "agent.id == 'ann' || 'ops' in agent.groups"
	r := newRuled(t, []custody.Condition{cond(custody.AllowWhen, expr)}, nil, groups)
	for _, a := range []string{"ann", "bob"} {
		if err := r.call(a, "t-"+a, `{"n":1}`); err != nil {
			t.Fatalf("%s: %v", a, err)
		}
	}
	r.refusedBy(t, r.call("eve", "t-eve", `{"n":1}`), custody.EDENIED, expr)
}

// TestDenyWhenTraceCounts: trace.calls counts the calls that ran in the
// trace, trace.refusals the refused ones, for a tool without budgets.
func TestDenyWhenTraceCounts(t *testing.T) {
	r := newRuled(t, []custody.Condition{
		cond(custody.DenyWhen, "trace.calls >= 2"),
		cond(custody.DenyWhen, "trace.refusals >= 3"),
	}, nil, nil)
	for i := range 2 {
		if err := r.call("ann", "t1", `{"n":1}`); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	r.refusedBy(t, r.call("ann", "t1", `{"n":1}`), custody.EDENIED, "trace.calls >= 2")
	if err := r.call("ann", "t2", `{"n":1}`); err != nil {
		t.Fatalf("another trace: %v", err)
	}
	for range 3 {
		wantKind(t, r.call("ann", "t3", `{"x":1}`), custody.EINVALID)
	}
	r.refusedBy(t, r.call("ann", "t3", `{"n":1}`), custody.EDENIED, "trace.refusals >= 3")
}

// TestAllowWhenTime: now is the gateway's clock.
func TestAllowWhenTime(t *testing.T) {
	expr := "now.getHours() >= 9 && now.getHours() < 17"
	r := newRuled(t, []custody.Condition{cond(custody.AllowWhen, expr)}, nil, nil)
	if err := r.call("ann", "t1", `{"n":1}`); err != nil {
		t.Fatalf("at 09:00: %v", err)
	}
	r.clk.Add(8 * time.Hour)
	r.refusedBy(t, r.call("ann", "t1", `{"n":1}`), custody.EDENIED, expr)
}

// TestApproveWhen: approveWhen holds a call of a tool that needs no
// approval for a human, naming the expression; once approved the same
// call runs, using the approval; a call it does not hold runs at once.
func TestApproveWhen(t *testing.T) {
	expr := "args.n > 100 || !args.s.startsWith('notes/')"
	r := newRuled(t, []custody.Condition{cond(custody.ApproveWhen, expr)}, nil, nil)
	if err := r.call("ann", "t1", `{"n":5,"s":"notes/a"}`); err != nil {
		t.Fatalf("a call it does not hold: %v", err)
	}
	args := `{"n":500,"s":"notes/a"}`
	err := r.call("ann", "t1", args)
	r.refusedBy(t, err, custody.EPENDING, expr)
	id := custody.AsError(err).ApprovalRequestID
	if _, err := r.svc.Decide(context.Background(), id, approval.Decision{Decision: approval.Approve, Operator: "op"}); err != nil {
		t.Fatalf("approve: %v", err)
	}
	if err := r.call("ann", "t1", args); err != nil {
		t.Fatalf("the approved call: %v", err)
	}
	if r.ran() != 2 {
		t.Fatalf("ran %d calls, want 2", r.ran())
	}
	a, err := r.db.Approval(context.Background(), id)
	if err != nil || a.Status != custody.ApprovalConsumed {
		t.Fatalf("approval %s: %+v %v, want it used", id, a.Status, err)
	}
}

// TestConditionErrorFailsClosed: a condition that cannot be evaluated
// (an optional argument the call left out) denies the call, and the
// refusal records the expression.
func TestConditionErrorFailsClosed(t *testing.T) {
	expr := "args.s.startsWith('x')"
	r := newRuled(t, []custody.Condition{cond(custody.DenyWhen, expr)}, nil, nil)
	err := r.call("ann", "t1", `{"n":1}`)
	r.refusedBy(t, err, custody.EDENIED, expr)
	if !strings.Contains(custody.ErrorMessage(err), "could not be evaluated") {
		t.Errorf("message %q does not say the condition failed", custody.ErrorMessage(err))
	}
	if r.ran() != 0 {
		t.Fatal("the tool ran")
	}
}

// TestConditionTypeError: a condition that does not type-check against
// the input schema stops the gateway's start, naming where it was
// declared.
func TestConditionTypeError(t *testing.T) {
	db, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	svc, err := approval.New(approval.Config{Store: db, Ledger: db})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, expr, want string }{
		{"ErrUnknownField", "args.amount > 100", "undefined field 'amount'"},
		{"ErrWrongType", "args.s > 100", "no matching overload"},
		{"ErrNotBool", "args.n + 1", "must be a bool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := spec("t", custody.Read)
			s.Conditions = []custody.Condition{{When: custody.ApproveWhen, Expr: tc.expr, Source: "/tools/fs__write_file/approveWhen"}}
			_, err := gate.New(gate.Config{Registry: loadRegistry(t), Ledger: db, Approvals: svc, State: db}, "x", []gate.Tool{{Spec: s, Handler: ok}})
			if err == nil || !strings.Contains(err.Error(), "/tools/fs__write_file/approveWhen: ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("gate.New: %v, want an error at /tools/fs__write_file/approveWhen with %q", err, tc.want)
			}
		})
	}
}
