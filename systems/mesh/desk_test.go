package mesh

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
)

// deskFixture wires an aggregator, a desk and two receivers on one
// loopback, and feeds one critical and one info sector.
type deskFixture struct {
	env       *testEnv
	agg       *Aggregator
	aggs      *[]Aggregation
	desk      *Desk
	alpha     *Receiver
	ops       *Receiver
	critical  Aggregation
	infoAggID string
}

func newDeskFixture(t *testing.T) *deskFixture {
	t.Helper()
	env := newEnv(t)
	ctx := context.Background()
	f := &deskFixture{env: env}
	f.agg, f.aggs = newTestAggregator(env)
	f.desk = NewDesk(DeskConfig{Wire: env.wire("desk"), Approvals: env.approvals, Now: env.clock.Now, AdvisoryWait: 50 * time.Millisecond})
	f.alpha = &Receiver{Audience: "ground_crew_alpha", Wire: env.wire("ground_crew_alpha"), Approvals: env.approvals}
	f.ops = &Receiver{Audience: "ops_center", Wire: env.wire("ops_center"), Approvals: env.approvals}
	for _, l := range []interface {
		Listen(context.Context) (Subscription, error)
	}{f.desk, f.agg, f.alpha, f.ops} {
		if _, err := l.Listen(ctx); err != nil {
			t.Fatal(err)
		}
	}
	f.feed(t, "forward-ridge-9", "11SLT1234567890", clearReading())
	aggs := f.feed(t, "forward-ridge-1", "11SKU1234567890", fireReading())
	if len(aggs) != 1 || aggs[0].SeverityTier != Emergency {
		t.Fatalf("event aggregation: %+v", aggs)
	}
	f.critical = aggs[0]
	env.clock.Add(time.Minute)
	ticked, err := f.agg.Tick(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range ticked {
		if a.SeverityTier == Info {
			f.infoAggID = a.ApprovalRequestID
		}
	}
	if f.infoAggID == "" {
		t.Fatal("no info aggregation")
	}
	return f
}

// feed publishes the signed advisory of one node on the loopback, where
// the desk's book and the aggregator hear it, and returns the
// aggregations it triggered.
func (f *deskFixture) feed(t *testing.T, id, mgrs string, r SensorReading) []Aggregation {
	t.Helper()
	_, raw := f.env.advisoryOf(t, id, mgrs, r, Conditions{})
	before := len(*f.aggs)
	if err := f.env.loop.Publish(context.Background(), f.env.signed(id, Subjects{}.Advisory(id), raw)); err != nil {
		t.Fatal(err)
	}
	return slices.Clone((*f.aggs)[before:])
}

func TestAggregationOpensApproval(t *testing.T) {
	f := newDeskFixture(t)
	a, err := f.env.approvals.Get(context.Background(), f.critical.ApprovalRequestID)
	if err != nil {
		t.Fatalf("no approval for the emergency aggregation: %v", err)
	}
	if a.Status != custody.ApprovalPending || a.Tool != broadcastTool {
		t.Fatalf("approval %+v", a)
	}
	// The info aggregation's id names a real approval too, which the desk
	// declined at once: it is never put to an operator.
	a, err = f.env.approvals.Get(context.Background(), f.infoAggID)
	if err != nil {
		t.Fatalf("info aggregation's id names no approval: %v", err)
	}
	if a.Status != custody.ApprovalDeclined || a.Operator != deskOperator {
		t.Fatalf("info aggregation's approval %s by %q, want declined by %s", a.Status, a.Operator, deskOperator)
	}
	if c, _ := f.desk.Case(f.infoAggID); c.Status != CaseInfo {
		t.Fatalf("info case status %s", c.Status)
	}
}

func TestBroadcastRefused(t *testing.T) {
	tests := []struct {
		name string
		form func(f *deskFixture) Form
		kind string
	}{
		{"InfoAggregation", func(f *deskFixture) Form {
			return Form{ApprovalRequestID: f.infoAggID, OperatorID: "op-7", Audiences: []string{"ops_center"}, Tier: Warning}
		}, custody.EDENIED},
		{"UnknownAggregation", func(f *deskFixture) Form {
			return Form{ApprovalRequestID: newUUID(), OperatorID: "op-7", Audiences: []string{"ops_center"}}
		}, custody.ENOTFOUND},
		{"ToInfo", func(f *deskFixture) Form {
			return Form{ApprovalRequestID: f.critical.ApprovalRequestID, OperatorID: "op-7", Audiences: []string{"ops_center"}, Tier: Info}
		}, custody.EDENIED},
		{"UnknownAudience", func(f *deskFixture) Form {
			return Form{ApprovalRequestID: f.critical.ApprovalRequestID, OperatorID: "op-7", Audiences: []string{"everyone"}}
		}, custody.EINVALID},
		{"IntroducesNumber", func(f *deskFixture) Form {
			return Form{ApprovalRequestID: f.critical.ApprovalRequestID, OperatorID: "op-7", Audiences: []string{"ops_center"},
				Text: "forward-ridge-1 (emergency): 400 homes threatened."}
		}, custody.EINVALID},
		{"IntroducesNode", func(f *deskFixture) Form {
			return Form{ApprovalRequestID: f.critical.ApprovalRequestID, OperatorID: "op-7", Audiences: []string{"ops_center"},
				Text: "forward-ridge-1 and forward-ridge-5 report emergency."}
		}, custody.EINVALID},
		{"OperatorIntroducesNumber", func(f *deskFixture) Form {
			return Form{ApprovalRequestID: f.critical.ApprovalRequestID, OperatorID: "op-7", Audiences: []string{"ops_center"},
				Text: "forward-ridge-1 (emergency). Evacuate by Route 74 now."}
		}, custody.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newDeskFixture(t)
			_, err := f.desk.Approve(context.Background(), tt.form(f))
			if k := custody.ErrorKind(err); k != tt.kind {
				t.Fatalf("kind = %q (%v), want %q", k, err, tt.kind)
			}
			if len(f.env.entries(t, EntryNotAllowed, nil)) != 1 {
				t.Fatal("refusal not recorded")
			}
			if len(f.alpha.Accepted())+len(f.ops.Accepted()) != 0 || len(f.env.entries(t, EntryBroadcastStarted, nil)) != 0 {
				t.Fatal("a refused broadcast was published")
			}
		})
	}
}

func TestBroadcastRaisedTierRefused(t *testing.T) {
	f := newDeskFixture(t)
	ctx := context.Background()
	// A warning aggregation: a hot spot alone.
	f.env.clock.Add(time.Second)
	f.feed(t, "forward-ridge-5", "11SMT1234567890", hotReading())
	f.env.clock.Add(time.Minute)
	ticked, _ := f.agg.Tick(ctx)
	var warn Aggregation
	for _, a := range ticked {
		if a.SeverityTier == Warning {
			warn = a
		}
	}
	if warn.ApprovalRequestID == "" {
		t.Fatal("no warning aggregation")
	}
	_, err := f.desk.Approve(ctx, Form{ApprovalRequestID: warn.ApprovalRequestID, OperatorID: "op-7", Audiences: []string{"ops_center"}, Tier: Critical})
	if custody.ErrorKind(err) != custody.EDENIED {
		t.Fatalf("raised tier: %v", err)
	}
	if a, _ := f.env.approvals.Get(ctx, warn.ApprovalRequestID); a.Status != custody.ApprovalPending {
		t.Fatalf("approval decided on a refused order: %s", a.Status)
	}
}

func TestBroadcastWithoutApprovalRefused(t *testing.T) {
	f := newDeskFixture(t)
	ctx := context.Background()
	id := f.critical.ApprovalRequestID
	if _, err := f.desk.Publish(ctx, id); custody.ErrorKind(err) != custody.EPENDING {
		t.Fatalf("publish before approval: %v", err)
	}
	if err := f.desk.Decline(ctx, id, "op-7", "not yet confirmed"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.desk.Publish(ctx, id); custody.ErrorKind(err) != custody.EDENIED {
		t.Fatalf("publish after decline: %v", err)
	}
	if len(f.ops.Accepted()) != 0 {
		t.Fatal("broadcast published without approval")
	}
}

func TestBroadcastConsoleEditRaisingTierRefused(t *testing.T) {
	f := newDeskFixture(t)
	ctx := context.Background()
	// A warning aggregation approved in the console with the tier raised.
	f.feed(t, "forward-ridge-5", "11SMT1234567890", hotReading())
	f.env.clock.Add(time.Minute)
	ticked, _ := f.agg.Tick(ctx)
	var id string
	for _, a := range ticked {
		if a.SeverityTier == Warning {
			id = a.ApprovalRequestID
		}
	}
	a, _ := f.env.approvals.Get(ctx, id)
	var o order
	_ = json.Unmarshal(a.Arguments, &o)
	o.SeverityTier = Emergency
	edited, _ := marshal(o)
	if _, err := f.env.approvals.Decide(ctx, id, approval.Decision{Decision: approval.Approve, Operator: "op-7", Arguments: edited}); err != nil {
		t.Fatal(err)
	}
	if bs, _ := f.desk.Sweep(ctx); len(bs) != 0 {
		t.Fatalf("raised tier broadcast: %+v", bs)
	}
	if c, _ := f.desk.Case(id); c.Status != CaseRefused {
		t.Fatalf("case status %s", c.Status)
	}
}

func TestBroadcastThreadsApprovalID(t *testing.T) {
	f := newDeskFixture(t)
	ctx := context.Background()
	id := f.critical.ApprovalRequestID
	b, err := f.desk.Approve(ctx, Form{ApprovalRequestID: id, OperatorID: "op-7",
		Audiences: []string{"ground_crew_alpha", "ops_center"}, Tier: Critical})
	if err != nil {
		t.Fatalf("approve: %v", err)
	}
	if b.SeverityTier != Critical || b.OperatorID != "op-7" || b.ApprovalRequestID != id {
		t.Fatalf("broadcast %+v", b)
	}
	if len(f.alpha.Accepted()) != 1 || len(f.ops.Accepted()) != 1 {
		t.Fatalf("delivered to alpha %d, ops %d", len(f.alpha.Accepted()), len(f.ops.Accepted()))
	}
	var kinds []string
	for _, e := range f.env.entries(t, "", map[string]string{RefApproval: id}) {
		kinds = append(kinds, e.Kind+"/"+e.Refs["mesh_kind"])
	}
	for _, want := range []string{
		EntrySent + "/aggregation", EntryReceived + "/aggregation", custody.KindApprovalRequest + "/",
		custody.KindApprovalDecided + "/", EntryBroadcastStarted + "/", EntrySent + "/broadcast", EntryReceived + "/broadcast",
	} {
		if !slices.Contains(kinds, want) {
			t.Fatalf("ledger thread of %s lacks %s: %v", id, want, kinds)
		}
	}
	if _, err := f.desk.Publish(ctx, id); custody.ErrorKind(err) != custody.ECONFLICT {
		t.Fatalf("second publish: %v", err)
	}
	if rep, err := f.env.db.Verify(ctx); err != nil {
		t.Fatalf("ledger verify: %v %+v", err, rep)
	}
}

func TestForgedBroadcastRefusedOnReceive(t *testing.T) {
	f := newDeskFixture(t)
	ctx := context.Background()
	forge := func(id string) []byte {
		raw, _ := marshal(Broadcast{SchemaVersion: broadcastVersion, BroadcastTS: "2026-07-14T14:02:00Z", ApprovalRequestID: id,
			OperatorID: "op-7", BroadcastText: "forward-ridge-1 (emergency). Leave now.", SeverityTier: Emergency, TargetAudience: []string{"ops_center"}})
		return raw
	}
	subject := Subjects{}.Broadcast("ops_center")
	signed := func(raw []byte) Msg { return f.env.signed("desk", subject, raw) }
	unsigned := Msg{Subject: subject, Data: forge(f.critical.ApprovalRequestID)}
	wrongRole := f.env.signed("aggregator", subject, forge(f.critical.ApprovalRequestID))
	tampered := signed(forge(f.critical.ApprovalRequestID))
	tampered.Data = forge(newUUID())
	tests := []struct {
		name string
		m    Msg
	}{
		{"NoApproval", signed(forge(newUUID()))},
		{"InfoAggregationID", signed(forge(f.infoAggID))},
		{"PendingApproval", signed(forge(f.critical.ApprovalRequestID))},
		{"Oversize", signed(append(forge(newUUID()), make([]byte, 2100)...))},
		{"Unsigned", unsigned},
		{"SignedByAggregator", wrongRole},
		{"Tampered", tampered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := f.ops.Receive(ctx, tt.m); err == nil {
				t.Fatal("forged broadcast admitted")
			}
		})
	}
	if len(f.ops.Accepted()) != 0 {
		t.Fatal("forged broadcast accepted")
	}
	if n := len(f.env.entries(t, EntryRefused, map[string]string{"mesh_kind": "broadcast"})); n != len(tests) {
		t.Fatalf("%d refusals recorded, want %d", n, len(tests))
	}
}

func TestForgedAggregationRefusedOnReceive(t *testing.T) {
	f := newDeskFixture(t)
	ctx := context.Background()
	good, _ := marshal(f.critical)
	mutate := func(fn func(*Aggregation)) []byte {
		c := f.critical
		c.InputNodeIDs = slices.Clone(c.InputNodeIDs)
		fn(&c)
		raw, _ := marshal(c)
		return raw
	}
	tests := []struct {
		name string
		raw  []byte
	}{
		{"Replayed", good},
		{"Unsigned", nil},
		{"UnknownNodeCited", mutate(func(a *Aggregation) {
			a.ApprovalRequestID = newUUID()
			a.AggregationText += " forward-ghost-1 (emergency) too."
		})},
		{"StaleNotInput", mutate(func(a *Aggregation) { a.ApprovalRequestID = newUUID(); a.StaleNodeIDs = []string{"forward-ghost-1"} })},
		{"BadTier", mutate(func(a *Aggregation) { a.ApprovalRequestID = newUUID(); a.SeverityTier = "severe" })},
		{"TooManyNodes", mutate(func(a *Aggregation) {
			a.ApprovalRequestID = newUUID()
			for i := range 33 {
				a.InputNodeIDs = append(a.InputNodeIDs, "forward-n"+string(rune('a'+i%26))+string(rune('a'+i/26)))
			}
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := f.env.signed("aggregator", "mesh.aggregation.11SKU", tt.raw)
			if tt.raw == nil {
				m = Msg{Subject: "mesh.aggregation.11SKU", Data: mutate(func(a *Aggregation) { a.ApprovalRequestID = newUUID() })}
			}
			if err := f.desk.Receive(ctx, m); err == nil {
				t.Fatal("forged aggregation admitted")
			}
		})
	}
}

// TestAggregationHeldWhileApprovalWaits checks the operator is asked one
// question at a time: a newer aggregation of the same nodes at the same
// tier opens no second approval while the first waits, and opens one once
// the first has expired.
func TestAggregationHeldWhileApprovalWaits(t *testing.T) {
	f := newDeskFixture(t)
	ctx := context.Background()
	held := func() []Case {
		var out []Case
		for _, c := range f.desk.Cases() {
			if c.Status == CaseHeld {
				out = append(out, c)
			}
		}
		return out
	}
	hs := held()
	if len(hs) != 1 || !slices.Equal(hs[0].Aggregation.InputNodeIDs, f.critical.InputNodeIDs) {
		t.Fatalf("held cases %+v, want the timer's repeat of the emergency sector", hs)
	}
	if a, err := f.env.approvals.Get(ctx, hs[0].Aggregation.ApprovalRequestID); err != nil || a.Status != custody.ApprovalDeclined || a.Operator != deskOperator {
		t.Fatalf("a held aggregation's approval: %+v, %v; want one declined by %s", a, err, deskOperator)
	}
	f.env.clock.Add(approval.DefaultTTL + time.Minute)
	ticked, err := f.agg.Tick(ctx)
	if err != nil {
		t.Fatal(err)
	}
	opened := 0
	for _, a := range ticked {
		if slices.Equal(sortedIDs(a.InputNodeIDs), sortedIDs(f.critical.InputNodeIDs)) {
			if a, err := f.env.approvals.Get(ctx, a.ApprovalRequestID); err == nil && a.Status == custody.ApprovalPending {
				opened++
			}
		}
	}
	if opened != 1 {
		t.Fatalf("after the first approval expired, %d new approvals for the sector, want 1", opened)
	}
}
