package mesh

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/custody-dev/custody"
)

// Aggregation text limits of the contract.
const (
	aggregationMinChars = 40
	aggregationMaxChars = 1200
)

type built struct {
	agg    Aggregation
	raw    []byte
	sector string
}

// build composes the aggregation of a group. A group whose message cannot
// fit maxMessageBytes even with the shortest text is split in two.
func (a *Aggregator) build(ctx context.Context, group []NodeStatus) ([]built, error) {
	b, err := a.buildOne(ctx, group)
	if err == nil {
		return []built{b}, nil
	}
	if len(group) < 2 || custody.ErrorKind(err) != custody.EINVALID {
		return nil, err
	}
	half := len(group) / 2
	left, err := a.build(ctx, group[:half])
	if err != nil {
		return nil, err
	}
	right, err := a.build(ctx, group[half:])
	return append(left, right...), err
}

func (a *Aggregator) buildOne(ctx context.Context, group []NodeStatus) (built, error) {
	agg := Aggregation{
		SchemaVersion:     aggregationVersion,
		AggregationTS:     a.cfg.Now().UTC().Format("2006-01-02T15:04:05Z"),
		SeverityTier:      Info,
		ApprovalRequestID: a.cfg.NewID(),
		SpatialExtentBBox: bbox(group),
	}
	reported := make(map[string]string, len(group))
	for _, n := range group {
		agg.InputNodeIDs = append(agg.InputNodeIDs, n.Advisory.NodeID)
		reported[n.Advisory.NodeID] = string(n.Advisory.DetectorState.Tier)
		agg.SeverityTier = MaxTier(agg.SeverityTier, n.Tier)
		if n.Stale {
			agg.StaleNodeIDs = append(agg.StaleNodeIDs, n.Advisory.NodeID)
		}
	}
	sector := groupSector(group)
	budget, err := aggregationBudget(agg)
	if err != nil {
		return built{}, err
	}
	check := aggregationCheck(reported, agg.SeverityTier, budget)
	tmpl := firstFitting(aggregationTemplates(sector, agg.SeverityTier, group), check)
	if tmpl == "" {
		return built{}, custody.Errorf(custody.EINVALID, "aggregation of %d nodes cannot fit %d bytes", len(group), maxMessageBytes)
	}
	comp := a.cfg.Composer.Compose(ctx, aggregationPrompt(sector, agg.SeverityTier, group), tmpl, check)
	agg.AggregationText = comp.Text
	agg.ComposerSignature = &ComposerSignature{Model: comp.Backend}
	raw, err := marshal(agg)
	if err != nil {
		return built{}, err
	}
	if len(raw) > maxMessageBytes {
		return built{}, custody.Errorf(custody.EINVALID, "aggregation is %d bytes", len(raw))
	}
	return built{agg: agg, raw: raw, sector: sector}, nil
}

// groupSector names a group for its subject: the sector, with the first
// node's id when the sector holds several groups.
func groupSector(group []NodeStatus) string {
	return group[0].Sector
}

// aggregationBudget returns the bytes left for the text once everything
// else (and the longest composer name) is in the message.
func aggregationBudget(agg Aggregation) (int, error) {
	agg.ComposerSignature = &ComposerSignature{Model: strings.Repeat("m", 96)}
	raw, err := marshal(agg)
	if err != nil {
		return 0, err
	}
	return maxMessageBytes - len(raw), nil
}

// aggregationCheck is the check every aggregation text passes: the guard
// against unknown nodes and tiers and escalation, and the size limits.
func aggregationCheck(reported map[string]string, severity Tier, budget int) func(string) error {
	g := aggregationGuard(reported, string(severity))
	return func(text string) error {
		if err := fitText(text, aggregationMinChars, aggregationMaxChars, budget); err != nil {
			return custody.Errorf(custody.EINVALID, "aggregation text: %v", err)
		}
		return g(text)
	}
}

// bbox returns [min_lat, min_lon, max_lat, max_lon] of the nodes whose
// position carries both, or nil when none does.
func bbox(group []NodeStatus) []float64 {
	box := []float64{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)}
	known := false
	for _, n := range group {
		p := n.Advisory.Position
		if p.Lat == nil || p.Lon == nil {
			continue
		}
		known = true
		box[0], box[1] = math.Min(box[0], *p.Lat), math.Min(box[1], *p.Lon)
		box[2], box[3] = math.Max(box[2], *p.Lat), math.Max(box[3], *p.Lon)
	}
	if !known {
		return nil
	}
	return box
}

// cite words what one node said: "forward-x (critical)", or for a stale
// node "forward-x (stale; last critical, capped to warning)".
func cite(n NodeStatus) string {
	id, said := n.Advisory.NodeID, n.Advisory.DetectorState.Tier
	switch {
	case !n.Stale:
		return fmt.Sprintf("%s (%s)", id, said)
	case n.Tier != said:
		return fmt.Sprintf("%s (stale; last %s, capped to %s)", id, said, n.Tier)
	}
	return fmt.Sprintf("%s (stale; last %s)", id, said)
}

// aggregationTemplates returns the deterministic texts, longest first:
// every node cited; then info nodes counted, not cited; then only the
// nodes at the severity tier cited.
func aggregationTemplates(sector string, severity Tier, group []NodeStatus) []string {
	head := fmt.Sprintf("Sector %s, %d nodes, severity %s.", sector, len(group), severity)
	var all, raised, top []string
	info := 0
	for _, n := range group {
		c := cite(n)
		all = append(all, c)
		if n.Advisory.DetectorState.Tier != Info || n.Stale {
			raised = append(raised, c)
		} else {
			info++
		}
		if n.Tier == severity {
			top = append(top, c)
		}
	}
	out := []string{head + " Reported: " + strings.Join(all, ", ") + "."}
	if len(raised) > 0 {
		out = append(out, fmt.Sprintf("%s Reported: %s; %d more nodes report info.", head, strings.Join(raised, ", "), info))
	}
	for k := len(top); k >= 1; k = (k + 1) / 2 {
		out = append(out, fmt.Sprintf("%s Highest: %s; %d nodes not cited.", head, strings.Join(top[:k], ", "), len(group)-k))
		if k == 1 {
			break
		}
	}
	return out
}

// aggregationPrompt asks a model to word the decided aggregation.
func aggregationPrompt(sector string, severity Tier, group []NodeStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Write a short wide-area synthesis for sector %s. The deterministic severity is %q; never state a higher one. ", sector, severity)
	b.WriteString("Cite each node you mention as node-id (tier) with the tier it reported, and mention no other node. Reports: ")
	cites := make([]string, len(group))
	for i, n := range group {
		cites[i] = cite(n)
	}
	b.WriteString(strings.Join(cites, ", "))
	if severity == Info {
		b.WriteString(". Every node reports info: do not mention fire, smoke, flames, ignition or evacuation.")
	}
	return b.String()
}
