package mesh

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody"
)

// runRidge runs a small demo-like ridge on the desk fixture: four nodes
// in two sectors report every 30 s for eight cycles, one catches fire
// and one falls silent after the second cycle (and goes stale), and the
// aggregator ticks every cycle.
func runRidge(t *testing.T, f *deskFixture) {
	t.Helper()
	ctx := context.Background()
	nodes := []struct {
		id, mgrs string
		reading  func(cycle int) SensorReading
	}{
		{"forward-ridge-1", "11SKU1234567890", func(int) SensorReading { return fireReading() }},
		{"forward-ridge-2", "11SKU1234567890", func(c int) SensorReading {
			if c >= 1 {
				return hotReading()
			}
			return clearReading()
		}},
		{"forward-ridge-3", "11SKU1234567890", func(int) SensorReading { return clearReading() }},
		{"forward-ridge-9", "11SLT1234567890", func(int) SensorReading { return clearReading() }},
	}
	for cycle := range 8 {
		f.env.clock.Add(30 * time.Second)
		for _, n := range nodes {
			if n.id == "forward-ridge-2" && cycle >= 2 {
				continue // silent from the third cycle on
			}
			f.feed(t, n.id, n.mgrs, n.reading(cycle))
		}
		if _, err := f.agg.Tick(ctx); err != nil {
			t.Fatalf("cycle %d: %v", cycle, err)
		}
	}
}

// TestAggregationEntryNamesItsAdvisories checks that a decision can be
// re-derived from the desk's ledger: every advisory the desk accepted is
// a mesh.message.received entry of the desk's with its digest and signer,
// and the entry of every aggregation the desk received names, input by
// input, the advisory entries it was checked against, each of the node
// cited, with the tier the text cites it with.
func TestAggregationEntryNamesItsAdvisories(t *testing.T) {
	f := newDeskFixture(t)
	runRidge(t, f)
	bySeq := map[int64]custody.Entry{}
	for _, e := range f.env.entries(t, "", nil) {
		bySeq[e.Seq] = e
	}
	aggs, stale := 0, 0
	for _, e := range f.env.entries(t, EntryReceived, map[string]string{refMeshKind: string(kindAggregation)}) {
		if e.Actor != "desk" {
			continue
		}
		var agg Aggregation
		if err := json.Unmarshal(e.Body, &agg); err != nil {
			t.Fatal(err)
		}
		aggs++
		if len(agg.StaleNodeIDs) > 0 {
			stale++
		}
		checkBasis(t, f, bySeq, e, agg)
	}
	if aggs < 4 || stale == 0 {
		t.Fatalf("%d aggregations on the desk's ledger, %d with a stale node: the run did not exercise the desk", aggs, stale)
	}
}

// checkBasis checks that the entry e of agg names an advisory entry of
// the desk's for each of its inputs.
func checkBasis(t *testing.T, f *deskFixture, bySeq map[int64]custody.Entry, e custody.Entry, agg Aggregation) {
	t.Helper()
	seqs := strings.Split(e.Refs[RefAdvisorySeqs], ",")
	sums := strings.Split(e.Refs[RefAdvisorySHA256s], ",")
	if len(seqs) != len(agg.InputNodeIDs) || len(sums) != len(agg.InputNodeIDs) {
		t.Fatalf("aggregation %s of %v names advisories %v / %v", agg.ApprovalRequestID, agg.InputNodeIDs, seqs, sums)
	}
	for i, id := range agg.InputNodeIDs {
		seq, err := strconv.ParseInt(seqs[i], 10, 64)
		adv, ok := bySeq[seq]
		if err != nil || !ok || seq >= e.Seq {
			t.Fatalf("aggregation %s names advisory seq %q for %s: no such earlier entry", agg.ApprovalRequestID, seqs[i], id)
		}
		var a Advisory
		_ = json.Unmarshal(adv.Body, &a)
		want := fmt.Sprintf("%s/%s/%s/%s/%s/%s", EntryReceived, "desk", kindAdvisory, id, sums[i], f.env.identity(id).PublicKey)
		got := fmt.Sprintf("%s/%s/%s/%s/%s/%s", adv.Kind, adv.Actor, adv.Refs[refMeshKind], a.NodeID, adv.BodySHA256, adv.Refs[RefSigner])
		if got != want || adv.Refs[RefMessageSHA256] != adv.BodySHA256 {
			t.Fatalf("aggregation %s input %s: advisory entry %d is %s (digest ref %s), want %s", agg.ApprovalRequestID, id, seq, got, adv.Refs[RefMessageSHA256], want)
		}
		if cited := citedTier(agg.AggregationText, id); cited != "" && cited != a.DetectorState.Tier {
			t.Fatalf("aggregation %s cites %s as %s, but the advisory it names says %s", agg.ApprovalRequestID, id, cited, a.DetectorState.Tier)
		}
	}
}

// TestDeskRecordsAdvisoriesItAccepts checks that the desk's book records
// each advisory it admits, on the desk's own ledger entries.
func TestDeskRecordsAdvisoriesItAccepts(t *testing.T) {
	f := newDeskFixture(t)
	runRidge(t, f)
	byActor := map[string]int{}
	for _, e := range f.env.entries(t, EntryReceived, map[string]string{refMeshKind: string(kindAdvisory)}) {
		byActor[e.Actor]++
	}
	if byActor["desk"] == 0 || byActor["desk"] != byActor["aggregator"] {
		t.Fatalf("advisories received by actor %v: the desk records every advisory it accepts, as the aggregator does", byActor)
	}
}
