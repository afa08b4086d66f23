package mesh

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody"
)

// Stats returns the aggregator's counters.
func (a *Aggregator) Stats() AggregatorStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stats
}

func newTestAggregator(env *testEnv) (*Aggregator, *[]Aggregation) {
	var got []Aggregation
	a := NewAggregator(AggregatorConfig{
		Wire: env.wire("aggregator"), Now: env.clock.Now, NodePeriod: 30 * time.Second,
		OnAggregation: func(agg Aggregation, _ []byte, _ string) { got = append(got, agg) },
	})
	return a, &got
}

// feed sends the advisory of one node through the aggregator's receive
// path, as if it came off the wire.
func feed(t *testing.T, env *testEnv, a *Aggregator, id, mgrs string, r SensorReading) []Aggregation {
	t.Helper()
	_, raw := env.advisoryOf(t, id, mgrs, r, Conditions{})
	aggs, err := a.Receive(context.Background(), env.signed(id, Subjects{}.Advisory(id), raw))
	if err != nil {
		t.Fatalf("receive %s: %v", id, err)
	}
	return aggs
}

func TestAllInfoAggregationStaysInfo(t *testing.T) {
	env := newEnv(t)
	a, got := newTestAggregator(env)
	for i := range 12 {
		feed(t, env, a, fmt.Sprintf("forward-ridge-%d", i+1), "11SKU1234567890", clearReading())
	}
	env.clock.Add(time.Minute)
	aggs, err := a.Tick(context.Background())
	if err != nil || len(aggs) != 1 {
		t.Fatalf("tick = %d aggregations, %v", len(aggs), err)
	}
	agg := (*got)[0]
	if agg.SeverityTier != Info || len(agg.StaleNodeIDs) != 0 || len(agg.InputNodeIDs) != 12 {
		t.Fatalf("aggregation %+v", agg)
	}
	for _, w := range []string{"fire", "smoke", "flame", "warning", "critical", "emergency", "evacu"} {
		if strings.Contains(strings.ToLower(agg.AggregationText), w) {
			t.Fatalf("all-info text mentions %q: %s", w, agg.AggregationText)
		}
	}
}

func TestAllInfoAggregationRefusesEscalatingComposer(t *testing.T) {
	env := newEnv(t)
	a := NewAggregator(AggregatorConfig{Wire: env.wire("aggregator"), Now: env.clock.Now,
		Composer: fakeBackend("Sector 11SKU: forward-ridge-1 (info) but a fire is spreading; severity emergency.")})
	feed(t, env, a, "forward-ridge-1", "11SKU1234567890", clearReading())
	env.clock.Add(time.Minute)
	aggs, err := a.Tick(context.Background())
	if err != nil || len(aggs) != 1 {
		t.Fatal(err)
	}
	if aggs[0].SeverityTier != Info || strings.Contains(aggs[0].AggregationText, "fire") || aggs[0].ComposerSignature.Model != "template" {
		t.Fatalf("escalating text kept: %+v", aggs[0])
	}
}

func TestStaleNodeCappedAtWarning(t *testing.T) {
	env := newEnv(t)
	a, _ := newTestAggregator(env)
	feed(t, env, a, "forward-ridge-1", "11SKU1234567890", fireReading())
	env.clock.Add(30 * time.Second)
	feed(t, env, a, "forward-ridge-2", "11SKU1234567890", clearReading())
	env.clock.Add(61 * time.Second) // ridge-1 silent 91 s > 3 × 30 s; ridge-2 61 s
	aggs, err := a.Tick(context.Background())
	if err != nil || len(aggs) != 1 {
		t.Fatalf("tick: %d, %v", len(aggs), err)
	}
	agg := aggs[0]
	if !slices.Equal(agg.StaleNodeIDs, []string{"forward-ridge-1"}) {
		t.Fatalf("stale = %v", agg.StaleNodeIDs)
	}
	if agg.SeverityTier != Warning {
		t.Fatalf("severity = %s, want warning (stale emergency capped)", agg.SeverityTier)
	}
	if !strings.Contains(agg.AggregationText, "forward-ridge-1 (stale; last emergency, capped to warning)") {
		t.Fatalf("text does not say the node is capped: %s", agg.AggregationText)
	}
}

func TestStaleBoundaryIsThreePeriods(t *testing.T) {
	env := newEnv(t)
	a, _ := newTestAggregator(env)
	feed(t, env, a, "forward-ridge-1", "11SKU1234567890", fireReading())
	env.clock.Add(90 * time.Second)
	if n := a.Nodes()[0]; n.Stale || n.Tier != Emergency {
		t.Fatalf("at exactly 3 periods: %+v", n)
	}
	env.clock.Add(time.Second)
	if n := a.Nodes()[0]; !n.Stale || n.Tier != Warning {
		t.Fatalf("past 3 periods: stale=%v tier=%s", n.Stale, n.Tier)
	}
}

func TestCadenceTimer(t *testing.T) {
	env := newEnv(t)
	a, got := newTestAggregator(env)
	feed(t, env, a, "forward-ridge-1", "11SKU1234567890", hotReading())
	steps := []struct {
		advance time.Duration
		want    int
	}{{59 * time.Second, 0}, {time.Second, 1}, {30 * time.Second, 1}, {29 * time.Second, 1}, {time.Second, 2}}
	for i, s := range steps {
		env.clock.Add(s.advance)
		if _, err := a.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(*got) != s.want {
			t.Fatalf("step %d: %d aggregations, want %d", i, len(*got), s.want)
		}
	}
}

func TestCadenceEventTrigger(t *testing.T) {
	env := newEnv(t)
	a, got := newTestAggregator(env)
	critical := hotReading()
	critical.HumidityPct, critical.WindSpeedMS = Float(10), Float(12) // hot spot + fire weather
	steps := []struct {
		name string
		r    SensorReading
		want int
	}{
		{"InfoNoEvent", clearReading(), 0},
		{"WarningNoEvent", hotReading(), 0},
		{"NewlyCritical", critical, 1},
		{"StillCritical", critical, 1},
		{"NewlyEmergency", fireReading(), 2},
		{"DownToInfo", clearReading(), 2},
		{"CriticalAgain", critical, 3},
	}
	for _, s := range steps {
		env.clock.Add(10 * time.Second)
		aggs := feed(t, env, a, "forward-ridge-1", "11SKU1234567890", s.r)
		if len(*got) != s.want {
			t.Fatalf("%s: %d aggregations, want %d", s.name, len(*got), s.want)
		}
		if len(aggs) > 0 && aggs[0].AggregationTS != env.clock.Now().Format("2006-01-02T15:04:05Z") {
			t.Fatalf("%s: event aggregation not emitted at once", s.name)
		}
	}
	if (*got)[1].SeverityTier != Emergency {
		t.Fatalf("event aggregation severity %s", (*got)[1].SeverityTier)
	}
}

func TestSectorSplitAbove32Nodes(t *testing.T) {
	env := newEnv(t)
	a, _ := newTestAggregator(env)
	for i := range 40 {
		feed(t, env, a, fmt.Sprintf("forward-a-%02d", i), "11SKU1234567890", clearReading())
	}
	for i := range 5 {
		feed(t, env, a, fmt.Sprintf("forward-b-%02d", i), "11SLT1234567890", hotReading())
	}
	env.clock.Add(time.Minute)
	aggs, err := a.Tick(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	seen := map[string]bool{}
	for _, agg := range aggs {
		sizes = append(sizes, len(agg.InputNodeIDs))
		for _, id := range agg.InputNodeIDs {
			if seen[id] {
				t.Fatalf("node %s in two aggregations", id)
			}
			seen[id] = true
		}
	}
	if !slices.Equal(sizes, []int{32, 8, 5}) || len(seen) != 45 {
		t.Fatalf("aggregation sizes %v, %d nodes", sizes, len(seen))
	}
	if aggs[2].SeverityTier != Warning || aggs[0].SeverityTier != Info {
		t.Fatalf("sector severities %s %s", aggs[0].SeverityTier, aggs[2].SeverityTier)
	}
}

func TestAggregationOverflowSplitAndShortened(t *testing.T) {
	env := newEnv(t)
	a, _ := newTestAggregator(env)
	for i := range 32 {
		id := fmt.Sprintf("forward-%02d-%s", i, strings.Repeat("z", 50))
		feed(t, env, a, id, "11SKU1234567890", hotReading())
	}
	env.clock.Add(time.Minute)
	aggs, err := a.Tick(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(aggs) < 2 {
		t.Fatalf("32 long ids fit one aggregation: %d", len(aggs))
	}
	for _, agg := range aggs {
		raw, _ := marshal(agg)
		if len(raw) > maxMessageBytes {
			t.Fatalf("aggregation of %d bytes", len(raw))
		}
		if err := env.reg.Validate(aggregationRef, raw); err != nil {
			t.Fatal(err)
		}
		if strings.Count(agg.AggregationText, "forward-") == len(agg.InputNodeIDs) && len(agg.InputNodeIDs) > 8 {
			t.Logf("text cites every node: %d", len(agg.InputNodeIDs))
		}
	}
}

func TestAdvisoryRefusedOnReceive(t *testing.T) {
	env := newEnv(t)
	a, _ := newTestAggregator(env)
	adv, raw := env.advisoryOf(t, "forward-ridge-1", "11SKU1234567890", clearReading(), Conditions{})
	mutate := func(f func(*Advisory)) []byte {
		c := adv
		f(&c)
		b, _ := marshal(c)
		return b
	}
	tests := []struct {
		name    string
		subject string
		raw     []byte
	}{
		{"Oversize", "mesh.advisory.forward-ridge-1", append(raw[:len(raw)-1], []byte(`,"x":"`+strings.Repeat("a", 2100)+`"}`)...)},
		{"ExtraField", "mesh.advisory.forward-ridge-1", append(raw[:len(raw)-1], []byte(`,"x":1}`)...)},
		{"NotJSON", "mesh.advisory.forward-ridge-1", []byte("forward-ridge-1 says all clear")},
		{"DuplicateKey", "mesh.advisory.forward-ridge-1", append(raw[:len(raw)-1], []byte(`,"node_id":"forward-ridge-1"}`)...)},
		{"ForgedTier", "mesh.advisory.forward-ridge-1", mutate(func(a *Advisory) { a.DetectorState.Tier = Emergency; a.AdvisoryText = "Tier emergency: active fire." })},
		{"UnknownRule", "mesh.advisory.forward-ridge-1", mutate(func(a *Advisory) { a.DetectorState.RuleSignature = "fwra-v0-2025" })},
		{"InfoWithFire", "mesh.advisory.forward-ridge-1", mutate(func(a *Advisory) { a.AdvisoryText = "Tier info: fire on the ridge." })},
		{"SpoofedSubject", "mesh.advisory.forward-ridge-2", raw},
		{"FromTheFuture", "mesh.advisory.forward-ridge-1", mutate(func(a *Advisory) { a.ObservationTS = "2027-01-01T00:00:00Z" })},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := a.Receive(context.Background(), env.signed("forward-ridge-1", tt.subject, tt.raw))
			if k := custody.ErrorKind(err); k != custody.EINVALID {
				t.Fatalf("kind = %q (%v), want invalid", k, err)
			}
			if got := len(env.entries(t, EntryRefused, nil)); got != i+1 {
				t.Fatalf("%d refusals recorded, want %d", got, i+1)
			}
			if len(a.Nodes()) != 0 {
				t.Fatal("a refused advisory was ingested")
			}
		})
	}
	if len(env.entries(t, EntryReceived, nil)) != 0 {
		t.Fatal("a refused advisory was recorded as received")
	}
}
