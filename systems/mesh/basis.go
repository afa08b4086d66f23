package mesh

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/custody-dev/custody"
)

// Ledger refs under which the desk's entry of an aggregation received
// names what the desk checked it against, so that the decision can be
// re-derived from the ledger alone.
const (
	// RefAdvisorySeqs lists, comma-separated and in the order of
	// input_advisory_node_ids, the seqs of the desk's own
	// mesh.message.received entries of the advisories it checked each
	// input against.
	RefAdvisorySeqs = "advisory_seqs"
	// RefAdvisorySHA256s lists the digests of those advisories (each its
	// entry's body_sha256 and RefMessageSHA256), in the same order.
	RefAdvisorySHA256s = "advisory_sha256s"
	// RefDeskStale lists the inputs the desk judged stale by its own
	// clock; absent when it judged none stale.
	RefDeskStale = "desk_stale_node_ids"
)

// basis is what the desk checked an aggregation against: for each input,
// in the aggregation's order, the advisory its check rested on, and the
// inputs the desk judged stale by its own clock.
type basis struct {
	advisories []heard
	stale      []string
}

// refs adds the basis to refs, the refs of the aggregation's entry, and
// returns them (see RefAdvisorySeqs).
func (b basis) refs(refs map[string]string) map[string]string {
	seqs := make([]string, len(b.advisories))
	sums := make([]string, len(b.advisories))
	for i, h := range b.advisories {
		seqs[i], sums[i] = strconv.FormatInt(h.Seq, 10), h.SHA256
	}
	refs[RefAdvisorySeqs] = strings.Join(seqs, ",")
	refs[RefAdvisorySHA256s] = strings.Join(sums, ",")
	if len(b.stale) > 0 {
		refs[RefDeskStale] = strings.Join(b.stale, ",")
	}
	return refs
}

// awaitInputs runs checkInputs until it passes, fails for good, or
// AdvisoryWait has passed: an advisory may arrive after the aggregation
// that cites it, on its own stream. It checks again each time the book
// admits an advisory. The wait is real time; what the check judges (how
// old an advisory is) goes by the desk's clock.
func (d *Desk) awaitInputs(agg Aggregation) (basis, error) {
	deadline := time.Now().Add(d.cfg.AdvisoryWait)
	for {
		seen := d.cfg.Book.changed()
		b, retry, err := d.checkInputs(agg)
		if !retry || !time.Now().Before(deadline) {
			return b, err
		}
		for d.cfg.Book.changed() == seen && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// checkInputs re-checks an aggregation as the aggregator checked it, but
// against the advisories the desk has seen itself: every input is a node
// on the roster whose advisory the desk admitted, each node cited with
// the tier of one of its latest advisories, the severity no higher than
// the inputs, and the text passing the aggregation guard (at least one
// node cited, no hazard at all when every input is info, OQ-T5.3).
//
// A node is stale (FR-T5.A.5) when the aggregation says so or when, by
// the desk's clock, its latest advisory is more than three polling
// periods old, whatever the aggregation says: a stale node's tier counts
// as warning at most, so an escalation that rests on one the aggregation
// did not declare stale is refused. retry says an input the desk has not
// seen, or a newer advisory, may yet arrive.
func (d *Desk) checkInputs(agg Aggregation) (b basis, retry bool, err error) {
	reported := make(map[string]string, len(agg.InputNodeIDs))
	top, now := -1, d.cfg.Now()
	for _, id := range agg.InputNodeIDs {
		h, silent, retry, err := d.checkInput(agg.AggregationText, id, now)
		if err != nil {
			return b, retry, err
		}
		b.advisories = append(b.advisories, h)
		reported[id] = string(h.Tier)
		t := h.Tier
		if silent {
			b.stale = append(b.stale, id)
		}
		if silent || slices.Contains(agg.StaleNodeIDs, id) {
			t = t.Cap(Warning)
		}
		top = max(top, t.Rank())
	}
	if agg.SeverityTier.Rank() > top {
		return b, len(b.stale) > 0, d.escalation(agg, b)
	}
	return b, false, aggregationGuard(reported, string(agg.SeverityTier))(agg.AggregationText)
}

// checkInput returns the advisory of node id that an aggregation text
// citing it rests on (the newest with the tier cited, else its latest),
// and whether the node is stale at now by its latest advisory.
func (d *Desk) checkInput(text, id string, now time.Time) (h heard, silent, retry bool, err error) {
	if !d.cfg.Wire.Roster.Node(id) {
		return h, false, false, custody.Errorf(custody.EUNAUTHORIZED, "aggregation cites node %s, which is not on the roster", id)
	}
	recent, ok := d.cfg.Book.recentHeard(id)
	if !ok {
		return h, false, true, custody.Errorf(custody.EINVALID, "aggregation cites node %s, whose advisory the desk has not seen", id)
	}
	latest := recent[len(recent)-1]
	h = latest
	if cited := citedTier(text, id); cited != "" {
		var found bool
		if h, found = newestOf(recent, cited); !found {
			return h, false, true, custody.Errorf(custody.EINVALID, "aggregation cites node %s as %s, but its latest advisories say %v", id, cited, tiersOf(recent))
		}
	}
	return h, stale(latest.At, now, d.cfg.NodePeriod), false, nil
}

// newestOf returns the newest of advisories (newest last) at tier t.
func newestOf(hs []heard, t Tier) (heard, bool) {
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].Tier == t {
			return hs[i], true
		}
	}
	return heard{}, false
}

// escalation is the refusal of an aggregation whose severity is above
// every input as the desk capped them, naming a stale input the
// aggregation did not declare when there is one.
func (d *Desk) escalation(agg Aggregation, b basis) error {
	for _, id := range b.stale {
		if !slices.Contains(agg.StaleNodeIDs, id) {
			return custody.Errorf(custody.EINVALID,
				"aggregation severity %s is above every input as the desk saw them: node %s has been silent more than 3 × %s by the desk's clock, so it is stale and counts as warning at most (FR-T5.A.5), but the aggregation does not list it in stale_node_ids",
				agg.SeverityTier, id, d.cfg.NodePeriod)
		}
	}
	return custody.Errorf(custody.EINVALID, "aggregation severity %s is above every input as the desk saw them", agg.SeverityTier)
}

// tiersOf returns the tiers of advisories, in order.
func tiersOf(hs []heard) []Tier {
	out := make([]Tier, len(hs))
	for i, h := range hs {
		out[i] = h.Tier
	}
	return out
}

// citedTier returns the tier the text cites node id with, "" when it
// cites none.
func citedTier(text, id string) Tier {
	for _, c := range meshCitationRE.FindAllStringSubmatch(text, -1) {
		if c[1] == id {
			if t := meshFirstTier(c[2]); t != "" {
				return Tier(t)
			}
		}
	}
	return ""
}
