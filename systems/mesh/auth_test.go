package mesh

import (
	"context"
	"encoding/base64"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/custody-dev/custody"
)

// authFixture is a desk and an aggregator on one loopback, the desk
// subscribed first, and two nodes of sector 11SKU that reported info.
type authFixture struct {
	env  *testEnv
	agg  *Aggregator
	aggs *[]Aggregation
	desk *Desk
}

func newAuthFixture(t *testing.T) *authFixture {
	t.Helper()
	env := newEnv(t)
	f := &authFixture{env: env}
	f.agg, f.aggs = newTestAggregator(env)
	f.desk = NewDesk(DeskConfig{Wire: env.wire("desk"), Approvals: env.approvals, Now: env.clock.Now, AdvisoryWait: 50 * time.Millisecond})
	for _, l := range []interface {
		Listen(context.Context) (Subscription, error)
	}{f.desk, f.agg} {
		if _, err := l.Listen(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"forward-ridge-1", "forward-ridge-2"} {
		f.publishAdvisory(t, id, id, clearReading())
	}
	env.identity("forward-ridge-3") // on the roster, never heard from
	return f
}

// publishAdvisory publishes node id's advisory of r, signed by signer.
func (f *authFixture) publishAdvisory(t *testing.T, signer, id string, r SensorReading) {
	t.Helper()
	_, raw := f.env.advisoryOf(t, id, "11SKU1234567890", r, Conditions{})
	if err := f.env.loop.Publish(context.Background(), f.env.signed(signer, Subjects{}.Advisory(id), raw)); err != nil {
		t.Fatal(err)
	}
}

// aggregation returns a contract-valid aggregation of inputs.
func aggregation(severity Tier, text string, inputs ...string) Aggregation {
	return Aggregation{
		SchemaVersion: aggregationVersion, AggregationTS: "2026-07-14T14:00:30Z", InputNodeIDs: inputs,
		AggregationText: text, SeverityTier: severity, ApprovalRequestID: newUUID(),
	}
}

// TestDeskRefusesForgedAggregations checks that the desk refuses, records
// and opens no approval for an aggregation that its own book of signed
// advisories does not bear out, or that the roster's aggregator did not
// sign, whatever the aggregation says of itself.
func TestDeskRefusesForgedAggregations(t *testing.T) {
	stranger, err := NewIdentity("aggregator-x", RoleAggregator)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		agg    Aggregation
		signer func(f *authFixture) *Identity
		tamper bool
		kind   string
	}{
		{name: "CriticalOverAllInfo", agg: aggregation(Critical,
			"Sector 11SKU, 2 nodes, severity critical. Reported: forward-ridge-1 (info), forward-ridge-2 (info).",
			"forward-ridge-1", "forward-ridge-2"), kind: custody.EINVALID},
		{name: "CitesInfoNodeAsCritical", agg: aggregation(Critical,
			"Sector 11SKU, 2 nodes, severity critical. Reported: forward-ridge-1 (critical), forward-ridge-2 (info).",
			"forward-ridge-1", "forward-ridge-2"), kind: custody.EINVALID},
		{name: "WarningOverAllInfo", agg: aggregation(Warning,
			"Sector 11SKU, 2 nodes, severity warning. Reported: forward-ridge-1 (info), forward-ridge-2 (info).",
			"forward-ridge-1", "forward-ridge-2"), kind: custody.EINVALID},
		{name: "HazardOverAllInfo", agg: aggregation(Info,
			"Sector 11SKU, 2 nodes, severity info. Reported: forward-ridge-1 (info), forward-ridge-2 (info). Smoke on the ridge.",
			"forward-ridge-1", "forward-ridge-2"), kind: custody.EINVALID},
		{name: "CitesUnseenNode", agg: aggregation(Info,
			"Sector 11SKU, 2 nodes, severity info. Reported: forward-ridge-1 (info), forward-ridge-3 (info).",
			"forward-ridge-1", "forward-ridge-3"), kind: custody.EINVALID},
		{name: "CitesNodeOffRoster", agg: aggregation(Critical,
			"Sector 11SKU, 2 nodes, severity critical. Reported: forward-ridge-1 (info), forward-ghost-1 (critical).",
			"forward-ridge-1", "forward-ghost-1"), kind: custody.EUNAUTHORIZED},
		{name: "CitesNoNode", agg: aggregation(Info,
			"Sector 11SKU, 2 nodes, severity info. Every node in the sector reports calm air today.",
			"forward-ridge-1", "forward-ridge-2"), kind: custody.EINVALID},
		{name: "SignedByNode", agg: aggregation(Info, "Sector 11SKU, 2 nodes, severity info. Reported: forward-ridge-1 (info), forward-ridge-2 (info).",
			"forward-ridge-1", "forward-ridge-2"), signer: func(f *authFixture) *Identity { return f.env.identity("forward-ridge-1") }, kind: custody.EUNAUTHORIZED},
		{name: "SignedOffRoster", agg: aggregation(Info, "Sector 11SKU, 2 nodes, severity info. Reported: forward-ridge-1 (info), forward-ridge-2 (info).",
			"forward-ridge-1", "forward-ridge-2"), signer: func(*authFixture) *Identity { return stranger }, kind: custody.EUNAUTHORIZED},
		{name: "Tampered", agg: aggregation(Info, "Sector 11SKU, 2 nodes, severity info. Reported: forward-ridge-1 (info), forward-ridge-2 (info).",
			"forward-ridge-1", "forward-ridge-2"), tamper: true, kind: custody.EUNAUTHORIZED},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newAuthFixture(t)
			ctx := context.Background()
			raw, err := marshal(tt.agg)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.env.reg.Validate(aggregationRef, raw); err != nil {
				t.Fatalf("the forged aggregation must pass its contract: %v", err)
			}
			signer := f.env.identity("aggregator")
			if tt.signer != nil {
				signer = tt.signer(f)
			}
			m, err := signer.sign("mesh.aggregation.11SKU", raw)
			if err != nil {
				t.Fatal(err)
			}
			if tt.tamper {
				tt.agg.SeverityTier = Warning
				m.Data, _ = marshal(tt.agg)
			}
			err = f.desk.Receive(ctx, m)
			if k := custody.ErrorKind(err); k != tt.kind {
				t.Fatalf("kind = %q (%v), want %q", k, err, tt.kind)
			}
			refused := f.env.entries(t, EntryRefused, map[string]string{refMeshKind: string(kindAggregation)})
			if len(refused) != 1 || refused[0].Refs[RefSigner] != signer.PublicKey {
				t.Fatalf("refusal entries %+v, want one naming the signer", refused)
			}
			if _, err := f.desk.Case(tt.agg.ApprovalRequestID); err == nil {
				t.Fatal("the forged aggregation is on the desk")
			}
			if _, err := f.env.approvals.Get(ctx, tt.agg.ApprovalRequestID); custody.ErrorKind(err) != custody.ENOTFOUND {
				t.Fatalf("the forged aggregation opened an approval: %v", err)
			}
		})
	}
}

// TestForgedAdvisoryRefused checks that an advisory the rule and guard
// would accept is refused, and never reaches the aggregator or the
// desk's book, when no admitted node signed it as itself.
func TestForgedAdvisoryRefused(t *testing.T) {
	ghost, err := NewIdentity("forward-ghost-1", RoleNode)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		msg  func(f *authFixture, raw []byte) Msg
	}{
		{"UnknownNode", func(_ *authFixture, raw []byte) Msg {
			m, _ := ghost.sign(Subjects{}.Advisory("forward-ghost-1"), raw)
			return m
		}},
		{"Unsigned", func(_ *authFixture, raw []byte) Msg {
			return Msg{Subject: Subjects{}.Advisory("forward-ghost-1"), Data: raw}
		}},
		{"SignedByAnotherNode", func(f *authFixture, raw []byte) Msg {
			return f.env.signed("forward-ridge-2", Subjects{}.Advisory("forward-ghost-1"), raw)
		}},
		{"SignedByAggregator", func(f *authFixture, raw []byte) Msg {
			return f.env.signed("aggregator", Subjects{}.Advisory("forward-ghost-1"), raw)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newAuthFixture(t)
			ctx := context.Background()
			// Self-consistent: the rule gives its tier for its reading, and
			// the text is the node's own template.
			_, raw := f.env.advisoryOf(t, "forward-ghost-1", "11SKU1234567890", fireReading(), Conditions{})
			before := len(*f.aggs)
			if err := f.env.loop.Publish(ctx, tt.msg(f, raw)); err != nil {
				t.Fatal(err)
			}
			if len(*f.aggs) != before {
				t.Fatalf("the forged advisory triggered %d aggregations", len(*f.aggs)-before)
			}
			for _, a := range []*Aggregator{f.agg, f.desk.Book()} {
				if _, ok := a.recentHeard("forward-ghost-1"); ok {
					t.Fatal("the forged advisory was ingested")
				}
			}
			refused := f.env.entries(t, EntryRefused, map[string]string{refMeshKind: string(kindAdvisory)})
			if len(refused) != 2 { // by the aggregator and by the desk's book
				t.Fatalf("%d advisory refusals recorded, want 2", len(refused))
			}
			if n := len(f.env.entries(t, EntryReceived, map[string]string{"node_id": "forward-ghost-1"})); n != 0 {
				t.Fatalf("the forged advisory was recorded as received %d times", n)
			}
		})
	}
}

// TestSignedFlowReachesBroadcast checks that the signed flow still works
// end to end: advisory → aggregation → approval → broadcast, and that
// every message recorded carries a signature that verifies against the
// body exactly as the ledger holds it.
func TestSignedFlowReachesBroadcast(t *testing.T) {
	f := newAuthFixture(t)
	ctx := context.Background()
	ops := &Receiver{Audience: "ops_center", Wire: f.env.wire("ops_center"), Approvals: f.env.approvals}
	if _, err := ops.Listen(ctx); err != nil {
		t.Fatal(err)
	}
	n, err := NewNode(NodeConfig{ID: "forward-ridge-1", Position: Position{MGRS: "11SKU1234567890"}, Sensor: fixedSensor(fireReading(), Conditions{}),
		Now: f.env.clock.Now, Wire: f.env.wire("forward-ridge-1")})
	if err != nil {
		t.Fatal(err)
	}
	f.env.clock.Add(30 * time.Second)
	if _, _, err := n.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if len(*f.aggs) != 1 || (*f.aggs)[0].SeverityTier != Emergency {
		t.Fatalf("aggregations %+v", *f.aggs)
	}
	id := (*f.aggs)[0].ApprovalRequestID
	if a, err := f.env.approvals.Get(ctx, id); err != nil || a.Status != custody.ApprovalPending {
		t.Fatalf("approval of the signed aggregation: %+v %v", a, err)
	}
	b, err := f.desk.Approve(ctx, Form{ApprovalRequestID: id, OperatorID: "op-7", Audiences: []string{"ops_center"}, Tier: Critical})
	if err != nil {
		t.Fatalf("approve: %v", err)
	}
	if got := ops.Accepted(); len(got) != 1 || got[0].ApprovalRequestID != b.ApprovalRequestID {
		t.Fatalf("ops received %+v", got)
	}
	signed := 0
	for _, kind := range []string{EntrySent, EntryReceived} {
		for _, e := range f.env.entries(t, kind, nil) {
			if err := verifyEntry(e.Refs, e.Body); err != nil {
				t.Fatalf("%s %s (seq %d): %v", kind, e.Refs[refMeshKind], e.Seq, err)
			}
			signed++
		}
	}
	if signed < 5 { // advisory sent, received; aggregation sent, received; broadcast sent, received
		t.Fatalf("%d signed entries", signed)
	}
}

// verifyEntry checks the signature in a ledger entry's refs against its
// body as recorded.
func verifyEntry(refs map[string]string, body []byte) error {
	kp, err := nkeys.FromPublicKey(refs[RefSigner])
	if err != nil {
		return err
	}
	sig, err := base64.RawURLEncoding.DecodeString(refs[RefSignature])
	if err != nil {
		return err
	}
	return kp.Verify(body, sig)
}

// TestDeskWaitsForAdvisory checks that an aggregation that arrives before
// the advisory it cites (they travel on different streams) is admitted
// once the advisory arrives within AdvisoryWait.
func TestDeskWaitsForAdvisory(t *testing.T) {
	f := newAuthFixture(t)
	f.desk.cfg.AdvisoryWait = 5 * time.Second
	agg := aggregation(Warning, "Sector 11SKU, 1 nodes, severity warning. Reported: forward-ridge-3 (warning).", "forward-ridge-3")
	raw, _ := marshal(agg)
	done := make(chan error, 1)
	go func() {
		done <- f.desk.Receive(context.Background(), f.env.signed("aggregator", "mesh.aggregation.11SKU", raw))
	}()
	time.Sleep(50 * time.Millisecond)
	_, adv := f.env.advisoryOf(t, "forward-ridge-3", "11SKU1234567890", hotReading(), Conditions{})
	if _, err := f.desk.Book().Receive(context.Background(), f.env.signed("forward-ridge-3", Subjects{}.Advisory("forward-ridge-3"), adv)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("aggregation refused although its advisory arrived: %v", err)
	}
	if c, err := f.desk.Case(agg.ApprovalRequestID); err != nil || c.Status != CasePending {
		t.Fatalf("case %+v %v", c, err)
	}
}

// TestReplayedAggregationRefusedAfterRestart checks that a desk that
// restarted (no cases in memory) refuses a signed aggregation it filed
// before, instead of filing it again.
func TestReplayedAggregationRefusedAfterRestart(t *testing.T) {
	f := newAuthFixture(t)
	ctx := context.Background()
	agg := aggregation(Info, "Sector 11SKU, 2 nodes, severity info. Reported: forward-ridge-1 (info), forward-ridge-2 (info).",
		"forward-ridge-1", "forward-ridge-2")
	raw, _ := marshal(agg)
	m := f.env.signed("aggregator", "mesh.aggregation.11SKU", raw)
	if err := f.desk.Receive(ctx, m); err != nil {
		t.Fatalf("first delivery: %v", err)
	}
	restarted := NewDesk(DeskConfig{Wire: f.env.wire("desk"), Approvals: f.env.approvals, Now: f.env.clock.Now, Book: f.desk.Book()})
	if err := restarted.Receive(ctx, m); custody.ErrorKind(err) != custody.ECONFLICT {
		t.Fatalf("replay after restart: %v, want conflict", err)
	}
	if n := len(f.env.entries(t, EntryRefused, map[string]string{refMeshKind: string(kindAggregation)})); n != 1 {
		t.Fatalf("%d refusals recorded, want 1", n)
	}
}
