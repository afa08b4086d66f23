package sim

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/custody-dev/custody/systems/mesh"
)

// tierMark is the one-character mark of a tier in a printed timeline.
func tierMark(t string) byte {
	switch mesh.Tier(t) {
	case mesh.Info:
		return '.'
	case mesh.Warning:
		return 'w'
	case mesh.Critical:
		return 'C'
	case mesh.Emergency:
		return 'E'
	}
	return ' '
}

// WriteTimeline prints the tier of every node at every cycle and every
// aggregation, for a human reading a terminal.
func (tl *Timeline) WriteTimeline(w io.Writer) error {
	ids := make([]string, 0, len(tl.Tiers))
	width := 0
	for id := range tl.Tiers {
		ids = append(ids, id)
		width = max(width, len(id))
	}
	slices.SortFunc(ids, compareNodeIDs)
	var b strings.Builder
	fmt.Fprintf(&b, "tier timeline (one column per cycle; . info, w warning, C critical, E emergency, blank silent)\n")
	for _, id := range ids {
		row := make([]byte, len(tl.Tiers[id]))
		for i, t := range tl.Tiers[id] {
			row[i] = tierMark(t)
		}
		fmt.Fprintf(&b, "  %-*s |%s|\n", width, id, row)
	}
	fmt.Fprintf(&b, "\naggregations (%d)\n", len(tl.Aggregations))
	for _, a := range tl.Aggregations {
		agg := a.Aggregation
		stale := ""
		if len(agg.StaleNodeIDs) > 0 {
			stale = " stale=" + strings.Join(agg.StaleNodeIDs, ",")
		}
		fmt.Fprintf(&b, "  %s %-9s %-9s nodes=%d%s id=%s\n    %s\n", a.At.Format("15:04:05"), a.Trigger, agg.SeverityTier,
			len(agg.InputNodeIDs), stale, agg.ApprovalRequestID, agg.AggregationText)
	}
	for _, bc := range tl.Broadcasts {
		fmt.Fprintf(&b, "\nbroadcast %s by %s to %s: %s\n", bc.SeverityTier, bc.OperatorID, strings.Join(bc.TargetAudience, ","), bc.BroadcastText)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// compareNodeIDs orders ids by name, then numerically by a trailing number.
func compareNodeIDs(a, b string) int {
	ai, an := splitNumber(a)
	bi, bn := splitNumber(b)
	if ai != bi {
		return strings.Compare(ai, bi)
	}
	return an - bn
}

func splitNumber(id string) (string, int) {
	i := len(id)
	for i > 0 && id[i-1] >= '0' && id[i-1] <= '9' {
		i--
	}
	n := 0
	fmt.Sscan(id[i:], &n)
	return id[:i], n
}

// Check verifies the invariants of a run: no aggregation is more severe
// than the highest tier its inputs reported, and each severity is the
// highest input tier after stale nodes are capped at warning. It returns
// how many aggregations capped a stale node reporting above warning.
func (tl *Timeline) Check() (staleCapped int, err error) {
	for _, a := range tl.Aggregations {
		agg := a.Aggregation
		top, want, capped := mesh.Info, mesh.Info, false
		for id, t := range a.Inputs {
			top = mesh.MaxTier(top, t)
			if slices.Contains(agg.StaleNodeIDs, id) {
				capped = capped || t.Rank() > mesh.Warning.Rank()
				t = t.Cap(mesh.Warning)
			}
			want = mesh.MaxTier(want, t)
		}
		if agg.SeverityTier.Rank() > top.Rank() {
			return staleCapped, fmt.Errorf("aggregation %s is %s, above every input (highest %s)", agg.ApprovalRequestID, agg.SeverityTier, top)
		}
		if agg.SeverityTier != want {
			return staleCapped, fmt.Errorf("aggregation %s is %s, want %s once stale nodes are capped", agg.ApprovalRequestID, agg.SeverityTier, want)
		}
		if capped {
			staleCapped++
		}
	}
	return staleCapped, nil
}
