package brain

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// deterministic is the default Answerer: per-job rules computed from the
// packet alone. Its advice is built from the packet's ids, counts and
// scores (every text in a packet is a hash), so it never needs, and never
// sees, the room's prose. The local scores stay authoritative: the Brain
// only reorders and comments.
type deterministic struct{}

// Answer implements Answerer.
func (deterministic) Answer(_ context.Context, job string, packet json.RawMessage) (json.RawMessage, error) {
	var p Packet
	if err := json.Unmarshal(packet, &p); err != nil {
		return nil, fmt.Errorf("decode %s packet: %w", job, err)
	}
	rules, ok := jobRules()[job]
	if !ok {
		return nil, fmt.Errorf("no rules for job %q", job)
	}
	a := &answer{job: job, p: p, s: p.LocalGraphSummary, focus: p.ActiveContext.FocusNode.ID}
	rules(a)
	return json.Marshal(Response{JobID: job, Suggestions: a.out})
}

// answer accumulates the suggestions of one job.
type answer struct {
	job   string
	p     Packet
	s     LocalGraphSummary
	focus string
	out   []Suggestion
}

// add appends a suggestion; links name nodes the new insight informs.
func (a *answer) add(conf float64, method, summary, body string, links ...string) {
	i := len(a.out)
	s := Suggestion{SuggestionIndex: &i, JobID: a.job, Summary: summary, Body: body, Confidence: ptr(round3(conf))}
	if method != "" {
		s.Methodology = &method
	}
	for _, target := range links {
		s.GraphUpdatesProposed = append(s.GraphUpdatesProposed,
			GraphUpdate{Source: insightID(a.job, i), Target: target, Type: "INFORMS", Confidence: ptr(round3(conf))})
	}
	a.out = append(a.out, s)
}

func ptr[T any](v T) *T { return &v }

// jobRules maps each of the twelve jobs to its rule.
func jobRules() map[string]func(*answer) {
	return map[string]func(*answer){
		"select_methodology":           selectMethodology,
		"suggest_next_move":            suggestNextMove,
		"detect_contradiction":         detectContradiction,
		"summarize_neighborhood":       summarizeNeighborhood,
		"classify_room_budding":        classifyRoomBudding,
		"rank_assumptions":             rankAssumptions,
		"generate_feynman_explanation": feynman,
		"strengthen_minto":             strengthenMinto,
		"prepare_investor_brief":       investorBrief,
		"opportunity_react":            opportunityReact,
		"opportunity_reflect":          opportunityReflect,
		"opportunity_rank":             opportunityRank,
	}
}

func selectMethodology(a *answer) {
	s := a.s
	switch {
	case len(s.Contradictions) > 0:
		a.add(0.7, "dialectical_inquiry", fmt.Sprintf("Resolve %d contradiction(s) around %s first.", len(s.Contradictions), a.focus),
			"Contradictions at depth 1 undermine anything built on the focus; settle them before structuring.", a.focus)
	case len(s.UnsupportedClaims) >= 2:
		a.add(0.65, "evidence_mapping", fmt.Sprintf("Map evidence for %d unsupported claim(s).", len(s.UnsupportedClaims)),
			"Most nearby claims have no SUPPORTS or EVIDENCES edge; map what would support them.", a.focus)
	case len(s.NearestAssumptions) >= 3:
		a.add(0.6, "assumption_testing", fmt.Sprintf("Test the %d assumptions the focus rests on.", len(s.NearestAssumptions)),
			"The neighbourhood is assumption-heavy; rank and test the riskiest first.", a.focus)
	case s.BankedOpportunities.Count > 0:
		a.add(0.55, "opportunity_scoring", "Score the banked opportunities against the job to be done.",
			"Opportunities are banked but the claims are stable; compare them.", a.focus)
	default:
		a.add(0.5, "minto_pyramid", "Structure the focus as a governing thought with supporting claims.",
			"The neighbourhood is quiet; write the argument down.", a.focus)
	}
}

func suggestNextMove(a *answer) {
	s := a.s
	for _, c := range s.Contradictions {
		a.add(0.8, "dialectical_inquiry", "Resolve the contradiction between "+c.ClaimAID+" and "+c.ClaimBID+".",
			"A direct contradiction is the cheapest uncertainty to remove.", c.ClaimBID)
	}
	for _, u := range s.UnsupportedClaims {
		a.add(0.65, "evidence_mapping", "Find evidence for "+u.ClaimID+".", "The claim has no supporting edge.", u.ClaimID)
	}
	for _, c := range s.NearestAssumptions {
		a.add(0.5+0.3*c.Score, "assumption_testing", "Design a test for assumption "+c.ID+".",
			fmt.Sprintf("It sits at depth %d with score %.3f.", c.Depth, c.Score), c.ID)
	}
	if len(a.out) == 0 {
		a.add(0.4, "", "Add claims and assumptions around "+a.focus+".", "The focus has no neighbourhood yet.", a.focus)
	}
	a.out = a.out[:min(len(a.out), 3)]
}

func detectContradiction(a *answer) {
	for _, c := range a.s.Contradictions {
		a.add(0.85, "dialectical_inquiry", c.ClaimAID+" contradicts "+c.ClaimBID+".",
			"Surfaced from a CONTRADICTS edge at depth 1; decide which claim yields.", c.ClaimBID)
	}
	if len(a.out) == 0 {
		a.add(0.3, "", "No contradiction near "+a.focus+".",
			fmt.Sprintf("%d unsupported claim(s) could still hide one.", len(a.s.UnsupportedClaims)), a.focus)
	}
}

func summarizeNeighborhood(a *answer) {
	s := a.s
	a.add(0.9, "", fmt.Sprintf("%s: %d claims, %d assumptions, %d contradictions, %d unsupported, %d recent changes, %d banked opportunities.",
		a.focus, len(s.NearestClaims), len(s.NearestAssumptions), len(s.Contradictions), len(s.UnsupportedClaims),
		len(s.RecentChanges), s.BankedOpportunities.Count), "Counts from the packet's local graph summary.", a.focus)
}

func classifyRoomBudding(a *answer) {
	s := a.s
	size := len(s.NearestClaims) + len(s.NearestAssumptions)
	class, conf := "blooming", 0.6
	switch {
	case size < 3:
		class, conf = "seed", 0.7
	case size < 8 || 2*len(s.UnsupportedClaims) > len(s.NearestClaims):
		class, conf = "budding", 0.65
	}
	a.add(conf, "", "The room looks "+class+" (stage "+a.p.RoomStage+").",
		fmt.Sprintf("%d claims and assumptions near the focus, %d unsupported.", size, len(s.UnsupportedClaims)))
}

func rankAssumptions(a *answer) {
	as := slices.Clone(a.s.NearestAssumptions)
	slices.SortStableFunc(as, func(x, y ClaimProjection) int { return cmp.Compare(y.Score, x.Score) })
	for i, c := range as {
		a.add(c.Score, "assumption_testing", fmt.Sprintf("Rank %d: %s (score %.3f).", i+1, c.ID, c.Score),
			fmt.Sprintf("Reached by %s at depth %d.", c.EdgeTypeIn, c.Depth), c.ID)
	}
	if len(as) == 0 {
		a.add(0.3, "", "No assumption near "+a.focus+".", "Name what the focus takes for granted.", a.focus)
	}
}

func feynman(a *answer) {
	s := a.s
	steps := "State " + a.focus + " in one sentence."
	if len(s.NearestClaims) > 0 {
		steps += " Ground it in " + s.NearestClaims[0].ID + "."
	}
	if len(s.NearestAssumptions) > 0 {
		steps += " Say plainly that it assumes " + s.NearestAssumptions[0].ID + "."
	}
	if len(s.Contradictions) > 0 {
		steps += " Admit the tension with " + s.Contradictions[0].ClaimBID + "."
	}
	a.add(0.6, "feynman_technique", "Explain "+a.focus+" as to a newcomer.", steps, a.focus)
}

func strengthenMinto(a *answer) {
	s := a.s
	pillars := s.NearestClaims[:min(len(s.NearestClaims), 3)]
	ids := make([]string, len(pillars))
	for i, c := range pillars {
		ids[i] = c.ID
	}
	a.add(0.6, "minto_pyramid", fmt.Sprintf("Govern with %s, supported by %d pillar(s).", a.focus, len(ids)),
		fmt.Sprintf("Pillars: %v.", ids), ids...)
	for _, u := range s.UnsupportedClaims {
		a.add(0.55, "minto_pyramid", "Add evidence under "+u.ClaimID+".", "A pillar without evidence weakens the pyramid.", u.ClaimID)
	}
}

func investorBrief(a *answer) {
	s := a.s
	a.add(0.6, "investor_brief", "Lead with "+a.focus+".", "Problem first, from the focus node.", a.focus)
	if len(s.BankedOpportunities.Items) > 0 {
		o := s.BankedOpportunities.Items[0]
		a.add(0.55, "investor_brief", fmt.Sprintf("Show opportunity %s (%s HSI).", o.IDHash, o.HSIBand),
			fmt.Sprintf("Composite score %.3f.", o.CompositeScore))
	}
	if len(s.NearestAssumptions) > 0 {
		a.add(0.5, "investor_brief", "Name the key risk: "+s.NearestAssumptions[0].ID+".", "Investors ask for the riskiest assumption.", s.NearestAssumptions[0].ID)
	}
	if n := len(s.Contradictions); n > 0 {
		a.add(0.5, "investor_brief", fmt.Sprintf("Resolve %d open contradiction(s) before the meeting.", n), "Open contradictions read as unclear thinking.")
	}
}

// verdict maps an HSI band to a reaction.
func verdict(band string) string {
	switch band {
	case "high":
		return "pursue"
	case "medium":
		return "probe"
	default:
		return "park"
	}
}

func opportunityReact(a *answer) {
	for _, o := range a.s.BankedOpportunities.Items {
		a.add(0.5+0.4*min(o.CompositeScore, 1), "", fmt.Sprintf("%s opportunity %s.", verdict(o.HSIBand), o.IDHash),
			fmt.Sprintf("HSI band %s, composite %.3f, tags %v.", o.HSIBand, o.CompositeScore, o.Tags))
	}
	noOpportunities(a)
}

func opportunityReflect(a *answer) {
	b := a.s.BankedOpportunities
	shown := len(b.Items)
	high := 0
	for _, o := range b.Items {
		if o.HSIBand == "high" {
			high++
		}
	}
	a.add(0.55, "", fmt.Sprintf("%d banked opportunities; %d of the best %d are high HSI.", b.Count, high, shown),
		"A bank with few high-HSI items suggests the job to be done needs sharper framing.")
}

func opportunityRank(a *answer) {
	items := slices.Clone(a.s.BankedOpportunities.Items)
	slices.SortStableFunc(items, func(x, y BankedOpportunity) int { return cmp.Compare(y.CompositeScore, x.CompositeScore) })
	for i, o := range items {
		a.add(min(o.CompositeScore, 1), "", fmt.Sprintf("Rank %d: opportunity %s (composite %.3f).", i+1, o.IDHash, o.CompositeScore),
			"Advisory: the room's own composite score stays authoritative.")
	}
	noOpportunities(a)
}

func noOpportunities(a *answer) {
	if len(a.out) == 0 {
		a.add(0.3, "", "No banked opportunity to consider.", "Bank opportunities as proposed nodes first.")
	}
}
