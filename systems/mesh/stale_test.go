package mesh

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody"
)

// staleDesk is a desk whose book has heard forward-ridge-1 report
// emergency at the env's start, with the nodes' polling period period.
func staleDesk(t *testing.T, env *testEnv, period time.Duration) *Desk {
	t.Helper()
	d := NewDesk(DeskConfig{Wire: env.wire("desk"), Approvals: env.approvals, Now: env.clock.Now, NodePeriod: period, AdvisoryWait: 20 * time.Millisecond})
	_, raw := env.advisoryOf(t, "forward-ridge-1", "11SKU1234567890", fireReading(), Conditions{})
	if _, err := d.Book().Receive(context.Background(), env.signed("forward-ridge-1", Subjects{}.Advisory("forward-ridge-1"), raw)); err != nil {
		t.Fatalf("book: %v", err)
	}
	return d
}

// signedAggregation returns agg, given a fresh approval id and the env's
// time, as the aggregator signs it.
func (e *testEnv) signedAggregation(t *testing.T, agg Aggregation) (Aggregation, Msg) {
	t.Helper()
	agg.SchemaVersion, agg.ApprovalRequestID = aggregationVersion, newUUID()
	agg.AggregationTS = e.clock.Now().UTC().Format("2006-01-02T15:04:05Z")
	raw, err := marshal(agg)
	if err != nil {
		t.Fatal(err)
	}
	return agg, e.signed("aggregator", Subjects{}.Aggregation("11SKU"), raw)
}

// TestDeskJudgesStaleness checks FR-T5.A.5 at the desk: a node whose
// latest advisory is more than three polling periods old by the desk's
// clock counts as warning at most, whatever the aggregation says, so an
// emergency resting on it is refused even when the aggregation omits
// stale_node_ids; exactly three periods is not stale.
func TestDeskJudgesStaleness(t *testing.T) {
	const (
		emergencyText = "Sector 11SKU, 1 nodes, severity emergency. Reported: forward-ridge-1 (emergency)."
		cappedText    = "Sector 11SKU, 1 nodes, severity warning. Reported: forward-ridge-1 (stale; last emergency, capped to warning)."
		warningText   = "Sector 11SKU, 1 nodes, severity warning. Reported: forward-ridge-1 (emergency)."
	)
	tests := []struct {
		name      string
		period    time.Duration
		age       time.Duration
		severity  Tier
		text      string
		declared  []string
		ok        bool
		deskStale string // the desk's RefDeskStale on an accepted aggregation
	}{
		{"Fresh", 30 * time.Second, 0, Emergency, emergencyText, nil, true, ""},
		{"ExactlyThreePeriods", 30 * time.Second, 90 * time.Second, Emergency, emergencyText, nil, true, ""},
		{"JustOverThreePeriods", 30 * time.Second, 90*time.Second + time.Millisecond, Emergency, emergencyText, nil, false, ""},
		{"TwentyMinutesOld", 30 * time.Second, 20 * time.Minute, Emergency, emergencyText, nil, false, ""},
		{"LongerPeriodNotStale", time.Minute, 91 * time.Second, Emergency, emergencyText, nil, true, ""},
		{"StaleDeclaredAndCapped", 30 * time.Second, 91 * time.Second, Warning, cappedText, []string{"forward-ridge-1"}, true, "forward-ridge-1"},
		{"StaleUndeclaredWithinCap", 30 * time.Second, 91 * time.Second, Warning, warningText, nil, true, "forward-ridge-1"},
		{"StaleDeclaredButEmergency", 30 * time.Second, 91 * time.Second, Emergency, emergencyText, []string{"forward-ridge-1"}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t)
			d := staleDesk(t, env, tt.period)
			env.clock.Add(tt.age)
			agg, m := env.signedAggregation(t, Aggregation{InputNodeIDs: []string{"forward-ridge-1"}, AggregationText: tt.text,
				SeverityTier: tt.severity, StaleNodeIDs: tt.declared})
			err := d.Receive(context.Background(), m)
			if !tt.ok {
				if custody.ErrorKind(err) != custody.EINVALID {
					t.Fatalf("receive: %v, want invalid", err)
				}
				if _, err := env.approvals.Get(context.Background(), agg.ApprovalRequestID); err == nil {
					t.Fatal("a refused aggregation opened an approval")
				}
				if n := len(env.entries(t, EntryRefused, map[string]string{refMeshKind: string(kindAggregation)})); n != 1 {
					t.Fatalf("%d refusals recorded, want 1", n)
				}
				return
			}
			if err != nil {
				t.Fatalf("receive: %v", err)
			}
			es := env.entries(t, EntryReceived, map[string]string{RefApproval: agg.ApprovalRequestID})
			if len(es) != 1 || es[0].Refs[RefDeskStale] != tt.deskStale {
				t.Fatalf("aggregation entries %+v, want one with %s=%q", es, RefDeskStale, tt.deskStale)
			}
		})
	}
}

// TestDeskStaleRefusalSaysWhy checks that the refusal of an escalation
// resting on an undeclared stale node names the node and the rule.
func TestDeskStaleRefusalSaysWhy(t *testing.T) {
	env := newEnv(t)
	d := staleDesk(t, env, 30*time.Second)
	env.clock.Add(20 * time.Minute)
	_, m := env.signedAggregation(t, Aggregation{InputNodeIDs: []string{"forward-ridge-1"},
		AggregationText: "Sector 11SKU, 1 nodes, severity emergency. Reported: forward-ridge-1 (emergency).", SeverityTier: Emergency})
	err := d.Receive(context.Background(), m)
	if msg := custody.ErrorMessage(err); !strings.Contains(msg, "forward-ridge-1") || !strings.Contains(msg, "FR-T5.A.5") || !strings.Contains(msg, "stale_node_ids") {
		t.Fatalf("refusal %q does not say which node is stale and why", msg)
	}
}

// TestDeskNodePeriodDefaults checks where a desk takes the polling period
// from: its config, else its book's, else the nodes' default.
func TestDeskNodePeriodDefaults(t *testing.T) {
	env := newEnv(t)
	book := NewAggregator(AggregatorConfig{Wire: env.wire("desk"), NodePeriod: 45 * time.Second, Passive: true})
	for _, tt := range []struct {
		name string
		cfg  DeskConfig
		want time.Duration
	}{
		{"Configured", DeskConfig{NodePeriod: 10 * time.Second, Book: book}, 10 * time.Second},
		{"Book", DeskConfig{Book: book}, 45 * time.Second},
		{"Default", DeskConfig{}, defaultNodePeriod},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Wire = env.wire("desk")
			d := NewDesk(tt.cfg)
			if d.cfg.NodePeriod != tt.want {
				t.Fatalf("desk period %s, want %s", d.cfg.NodePeriod, tt.want)
			}
			if tt.cfg.Book == nil && d.Book().period() != tt.want {
				t.Fatalf("the desk's own book judges by %s, want %s", d.Book().period(), tt.want)
			}
		})
	}
}
