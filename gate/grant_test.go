package gate_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/internal/testclock"
	"github.com/custody-dev/custody/store/postgres"
	"github.com/custody-dev/custody/store/postgres/pgtest"
	"github.com/custody-dev/custody/store/sqlite"
)

// grantEnv is a gateway whose approval service makes grants, as serve
// wires it: the grants are kept in the store's state and checked by the
// gateway. Its tools write files: write_file, whose policy caps the
// content at 20 characters, and write_locked, which forbids grants; both
// need a human's confirmation. definition is what write_file's
// definition is now (a re-pin changes it).
type grantEnv struct {
	svc        *approval.Service
	gw         *gate.Gateway
	clk        *testclock.Clock
	db         custody.Store
	runs       *atomic.Int64
	definition *atomic.Value
}

// newGrantEnv builds a grant environment on a fresh SQLite store.
func newGrantEnv(t *testing.T) *grantEnv {
	t.Helper()
	db, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	clk := testclock.New(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	return grantGateway(t, db, clk, &atomic.Int64{}, newDefinition("v1-sha256"))
}

func newDefinition(v string) *atomic.Value {
	d := &atomic.Value{}
	d.Store(v)
	return d
}

// grantGateway builds one gateway instance on db; instances given the
// same runs and definition share them.
func grantGateway(t *testing.T, db custody.Store, clk *testclock.Clock, runs *atomic.Int64, definition *atomic.Value) *grantEnv {
	t.Helper()
	e := &grantEnv{clk: clk, db: db, runs: runs, definition: definition}
	var err error
	e.svc, err = approval.New(approval.Config{Store: db, Ledger: db, State: db, Now: clk.Now,
		Validate:   func(ctx context.Context, a custody.Approval) error { return e.gw.CheckApproval(ctx, a) },
		CheckGrant: func(ctx context.Context, g custody.Grant) error { return e.gw.CheckGrant(ctx, g) }})
	if err != nil {
		t.Fatal(err)
	}
	file := func(name string) custody.ToolSpec {
		s := spec(name, custody.Write)
		s.Input, s.ArgumentsPolicy = testContract+"#/$defs/file_args", testContract+"#/$defs/file_policy"
		s.Effect, s.Approval = custody.EffectConsequential, custody.HumanConfirmation
		return s
	}
	locked := file("write_locked")
	locked.Grants = custody.NoGrants()
	run := func(context.Context, custody.Call) (json.RawMessage, error) {
		runs.Add(1)
		return json.RawMessage(`{"ok":true}`), nil
	}
	refs := func() map[string]string {
		return map[string]string{custody.RefToolDefinition: definition.Load().(string)}
	}
	e.gw, err = gate.New(gate.Config{Registry: loadRegistry(t), Ledger: db, Approvals: e.svc, State: db, Now: clk.Now, Logger: discard()},
		"grant-test", []gate.Tool{{Spec: file("write_file"), Handler: run, Refs: refs}, {Spec: locked, Handler: run}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// call calls tool as actor in trace.
func (e *grantEnv) call(actor, trace, tool, args string) (custody.Result, error) {
	return e.gw.Call(context.Background(), custody.Call{Trace: trace, Tool: tool, Args: json.RawMessage(args), Actor: actor, Via: "test"})
}

// hold makes a held call and returns its approval request.
func (e *grantEnv) hold(t *testing.T, actor, trace, tool, args string) string {
	t.Helper()
	_, err := e.call(actor, trace, tool, args)
	return wantKind(t, err, custody.EPENDING).ApprovalRequestID
}

// grant approves the held call id with a grant of terms and returns the
// grant's id.
func (e *grantEnv) grant(t *testing.T, id string, terms approval.GrantTerms) string {
	t.Helper()
	a, err := e.svc.Decide(context.Background(), id, approval.Decision{Decision: approval.Approve, Operator: "op-1", Grant: &terms})
	if err != nil {
		t.Fatalf("decide %s with a grant: %v", id, err)
	}
	if a.Grant == "" || a.Status != custody.ApprovalApproved {
		t.Fatalf("decided %+v: no grant", a)
	}
	return a.Grant
}

// notesGrant is the grant the console prefills for a call writing
// notes/a.md: paths under notes/, the same content... edited to allow
// any content, as an operator would.
func notesGrant(t *testing.T) json.RawMessage {
	t.Helper()
	s, err := approval.SuggestGrant(json.RawMessage(`{"path":"notes/a.md","content":"one"}`))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(s, &doc); err != nil {
		t.Fatal(err)
	}
	doc["properties"].(map[string]any)["content"] = map[string]any{"type": "string"}
	out, _ := json.Marshal(doc)
	return out
}

// entryOf returns the entry a result's receipt names.
func entryOf(t *testing.T, db custody.Store, seq int64) custody.Entry {
	t.Helper()
	es, err := db.Entries(context.Background(), custody.Query{After: seq - 1, Limit: 1})
	if err != nil || len(es) != 1 {
		t.Fatalf("entry %d: %v", seq, err)
	}
	return es[0]
}

// TestGrantCoversBoundedClass: a grant for write_file under notes/ for 3
// calls lets three calls run without asking, each naming the grant on its
// entries; the fourth, and any call outside notes/, is held as before. A
// call within the grant that the tool's own policy refuses is refused: a
// grant never widens the policy, and that call uses nothing.
func TestGrantCoversBoundedClass(t *testing.T) {
	e := newGrantEnv(t)
	ctx := context.Background()
	held := e.hold(t, "agent-1", "t-held", "write_file", `{"path":"notes/a.md","content":"one"}`)
	id := e.grant(t, held, approval.GrantTerms{Arguments: notesGrant(t), MaxUses: 3})

	created, err := e.db.Entries(ctx, custody.Query{Kind: custody.KindGrantCreated})
	if err != nil || len(created) != 1 {
		t.Fatalf("grant.created entries: %d, %v", len(created), err)
	}
	var body custody.Grant
	if err := json.Unmarshal(created[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	if created[0].Refs[custody.RefGrant] != id || created[0].Actor != "op-1" || body.Operator != "op-1" || body.Agent != "agent-1" ||
		body.Tool != "write_file" || body.MaxUses != 3 || body.Definition != "v1-sha256" || len(body.Arguments) == 0 {
		t.Errorf("grant.created: refs %v, body %s", created[0].Refs, created[0].Body)
	}

	// The policy still holds inside the grant: too long a content.
	_, err = e.call("agent-1", "t-grant", "write_file", `{"path":"notes/long.md","content":"far more than twenty characters"}`)
	wantKind(t, err, custody.EINVALID)

	for _, path := range []string{"notes/b.md", "notes/sub/c.md", "notes/d.md"} {
		res, err := e.call("agent-1", "t-grant", "write_file", `{"path":"`+path+`","content":"x"}`)
		if err != nil {
			t.Fatalf("%s under the grant: %v", path, err)
		}
		if got := entryOf(t, e.db, res.Receipt.Seq); got.Refs[custody.RefGrant] != id {
			t.Errorf("%s: the entry names %v, want grant %s", path, got.Refs, id)
		}
	}
	started, _ := e.db.Entries(ctx, custody.Query{Kind: custody.KindCallStarted, Refs: map[string]string{custody.RefGrant: id}})
	if len(started) != 3 || e.runs.Load() != 3 {
		t.Errorf("%d call.started name the grant, %d runs; want 3 and 3", len(started), e.runs.Load())
	}
	if g, _ := e.svc.Grant(ctx, id); g.Uses != 3 || g.Status != custody.GrantUsedUp {
		t.Errorf("after three calls the grant is %s with %d uses", g.Status, g.Uses)
	}
	for _, args := range []string{
		`{"path":"notes/e.md","content":"x"}`,                                      // the fourth
		`{"path":"other/e.md","content":"x"}`,                                      // outside notes/
		`{"path":"notes/../etc/e","content":"x"}`,                                  // climbing out
		`{"path":"notes/f.md","content":"x","approval_request_id":"` + held + `"}`, // a member the grant does not allow
	} {
		e.hold(t, "agent-1", "t-outside", "write_file", args)
	}
	if e.runs.Load() != 3 {
		t.Errorf("%d runs; the held calls ran", e.runs.Load())
	}
}

// TestGrantRevoked: a revocation stops the grant at once, on the ledger
// as grant.revoked; a second revocation is a conflict.
func TestGrantRevoked(t *testing.T) {
	e := newGrantEnv(t)
	ctx := context.Background()
	id := e.grant(t, e.hold(t, "agent-1", "t1", "write_file", `{"path":"notes/a.md","content":"one"}`),
		approval.GrantTerms{Arguments: notesGrant(t), MaxUses: 10})
	if _, err := e.call("agent-1", "t2", "write_file", `{"path":"notes/b.md","content":"x"}`); err != nil {
		t.Fatalf("under the grant: %v", err)
	}
	if _, err := e.svc.Revoke(ctx, id, "op-2", ""); custody.ErrorKind(err) != custody.EINVALID {
		t.Errorf("a revocation without a reason: %v", err)
	}
	g, err := e.svc.Revoke(ctx, id, "op-2", "the migration is done")
	if err != nil || g.Status != custody.GrantRevoked || g.RevokedBy != "op-2" {
		t.Fatalf("revoke: %+v, %v", g, err)
	}
	e.hold(t, "agent-1", "t2", "write_file", `{"path":"notes/c.md","content":"x"}`)
	if _, err := e.svc.Revoke(ctx, id, "op-2", "again"); custody.ErrorKind(err) != custody.ECONFLICT {
		t.Errorf("a second revocation: %v", err)
	}
	revoked, _ := e.db.Entries(ctx, custody.Query{Kind: custody.KindGrantRevoked})
	if len(revoked) != 1 || revoked[0].Refs[custody.RefGrant] != id || revoked[0].Actor != "op-2" {
		t.Errorf("grant.revoked entries: %+v", revoked)
	}
	if g, _ := e.svc.Grant(ctx, id); g.Status != custody.GrantRevoked || g.Uses != 1 {
		t.Errorf("the revoked grant reads %s with %d uses", g.Status, g.Uses)
	}
	if e.runs.Load() != 1 {
		t.Errorf("%d runs, want 1", e.runs.Load())
	}
}

// TestGrantExpires: a grant until a time covers calls before it and none
// after, by the injected clock.
func TestGrantExpires(t *testing.T) {
	e := newGrantEnv(t)
	id := e.grant(t, e.hold(t, "agent-1", "t1", "write_file", `{"path":"notes/a.md","content":"one"}`),
		approval.GrantTerms{Arguments: notesGrant(t), Expires: e.clk.Now().Add(time.Hour)})
	if _, err := e.call("agent-1", "t2", "write_file", `{"path":"notes/b.md","content":"x"}`); err != nil {
		t.Fatalf("before the expiry: %v", err)
	}
	e.clk.Add(time.Hour)
	e.hold(t, "agent-1", "t2", "write_file", `{"path":"notes/c.md","content":"x"}`)
	if g, _ := e.svc.Grant(context.Background(), id); g.Status != custody.GrantExpired || g.Uses != 1 {
		t.Errorf("after the expiry the grant is %s with %d uses", g.Status, g.Uses)
	}
	if _, err := e.svc.Decide(context.Background(), e.hold(t, "agent-1", "t3", "write_file", `{"path":"notes/d.md","content":"x"}`),
		approval.Decision{Decision: approval.Approve, Operator: "op-1", Grant: &approval.GrantTerms{Arguments: notesGrant(t), Expires: e.clk.Now()}}); custody.ErrorKind(err) != custody.EINVALID {
		t.Errorf("a grant that expires now: %v, want invalid", err)
	}
}

// TestGrantVoidAfterRepin: a grant made under one definition of its tool
// covers no call once the tool is re-pinned to another, and lists void.
func TestGrantVoidAfterRepin(t *testing.T) {
	e := newGrantEnv(t)
	id := e.grant(t, e.hold(t, "agent-1", "t1", "write_file", `{"path":"notes/a.md","content":"one"}`),
		approval.GrantTerms{Arguments: notesGrant(t), MaxUses: 5})
	if _, err := e.call("agent-1", "t2", "write_file", `{"path":"notes/b.md","content":"x"}`); err != nil {
		t.Fatalf("under v1: %v", err)
	}
	e.definition.Store("v2-sha256")
	e.hold(t, "agent-1", "t2", "write_file", `{"path":"notes/c.md","content":"x"}`)
	grants, err := e.svc.Grants(context.Background(), e.gw.Definition)
	if err != nil || len(grants) != 1 || grants[0].ID != id || grants[0].Status != custody.GrantVoid {
		t.Errorf("grants after the re-pin: %+v, %v", grants, err)
	}
	if e.runs.Load() != 1 {
		t.Errorf("%d runs, want 1", e.runs.Load())
	}
}

// TestGrantForbiddenByTool: a tool whose policy says "grants": false
// refuses a grant, saying so, and nothing is decided or recorded.
func TestGrantForbiddenByTool(t *testing.T) {
	e := newGrantEnv(t)
	ctx := context.Background()
	held := e.hold(t, "agent-1", "t1", "write_locked", `{"path":"notes/a.md","content":"one"}`)
	_, err := e.svc.Decide(ctx, held, approval.Decision{Decision: approval.Approve, Operator: "op-1",
		Grant: &approval.GrantTerms{Arguments: notesGrant(t), MaxUses: 3}})
	ce := wantKind(t, err, custody.EDENIED)
	if want := `tool "write_locked" forbids grants`; len(ce.Message) < len(want) || ce.Message[:len(want)] != want {
		t.Errorf("refusal %q", ce.Message)
	}
	if a, _ := e.svc.Get(ctx, held); a.Status != custody.ApprovalPending {
		t.Errorf("the held call is %s after the refused grant", a.Status)
	}
	for _, kind := range []string{custody.KindGrantCreated, custody.KindApprovalDecided} {
		if es, _ := e.db.Entries(ctx, custody.Query{Kind: kind}); len(es) != 0 {
			t.Errorf("%d %s entries after the refused grant", len(es), kind)
		}
	}
	// Approved once, it runs; a grant was never an option.
	if _, err := e.svc.Decide(ctx, held, approval.Decision{Decision: approval.Approve, Operator: "op-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.call("agent-1", "t1", "write_locked", `{"path":"notes/a.md","content":"one"}`); err != nil {
		t.Errorf("approved once: %v", err)
	}
}

// TestGrantOfAnotherAgent: a grant covers the agent it was made for, and
// no other.
func TestGrantOfAnotherAgent(t *testing.T) {
	e := newGrantEnv(t)
	id := e.grant(t, e.hold(t, "agent-1", "t1", "write_file", `{"path":"notes/a.md","content":"one"}`),
		approval.GrantTerms{Arguments: notesGrant(t), MaxUses: 3})
	e.hold(t, "agent-2", "t2", "write_file", `{"path":"notes/b.md","content":"x"}`)
	if g, _ := e.svc.Grant(context.Background(), id); g.Uses != 0 || e.runs.Load() != 0 {
		t.Errorf("another agent's call used the grant: %d uses, %d runs", g.Uses, e.runs.Load())
	}
}

// raceLastUse has calls, spread over the gateways, race for a grant with
// one use left and reports how many ran; every loser is refused, held
// or in conflict, never run.
func raceLastUse(t *testing.T, gws []*grantEnv) {
	t.Helper()
	e := gws[0]
	e.grant(t, e.hold(t, "agent-1", "t1", "write_file", `{"path":"notes/a.md","content":"one"}`),
		approval.GrantTerms{Arguments: notesGrant(t), MaxUses: 1})
	const callers = 8
	var wg sync.WaitGroup
	errs := make([]error, callers)
	start := make(chan struct{})
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = gws[i%len(gws)].call("agent-1", "t-race", "write_file", `{"path":"notes/r`+string(rune('a'+i))+`.md","content":"x"}`)
		}()
	}
	close(start)
	wg.Wait()
	ran := 0
	for i, err := range errs {
		switch custody.ErrorKind(err) {
		case "":
			ran++
		case custody.ECONFLICT, custody.EPENDING:
		default:
			t.Errorf("caller %d: %v", i, err)
		}
	}
	if ran != 1 || e.runs.Load() != 1 {
		t.Errorf("%d calls ran (%d runs) for the last use, want exactly 1", ran, e.runs.Load())
	}
}

// TestGrantLastUseRace: concurrent calls at one gateway take the last
// use of a grant once.
func TestGrantLastUseRace(t *testing.T) {
	raceLastUse(t, []*grantEnv{newGrantEnv(t)})
}

// TestGrantLastUseAcrossInstances: two gateways on one PostgreSQL store
// racing for a grant's last use: exactly one call runs, since the use is
// counted under the grant's limit in the commit of its call.started.
func TestGrantLastUseAcrossInstances(t *testing.T) {
	url := pgtest.URL(t)
	key := filepath.Join(t.TempDir(), "signing.key")
	clk := testclock.New(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	runs, def := &atomic.Int64{}, newDefinition("v1-sha256")
	var gws []*grantEnv
	for range 2 {
		db, err := postgres.Open(context.Background(), url, postgres.Options{KeyFile: key})
		if err != nil {
			t.Fatalf("open store: %v", err)
		}
		t.Cleanup(func() { db.Close() })
		gws = append(gws, grantGateway(t, db, clk, runs, def))
	}
	raceLastUse(t, gws)
}
