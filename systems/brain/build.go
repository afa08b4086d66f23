package brain

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/custody-dev/custody"
)

// Per-list limits of a local graph summary.
const (
	topClaims         = 5
	topAssumptions    = 5
	topContradictions = 5
	topUnsupported    = 5
	topRecent         = 10
	recentWindow      = 24 * time.Hour
	topOpportunities  = 3
	unreachableDepth  = 99
	maxChainEdges     = 50
)

// BuildOptions says which packet to build.
type BuildOptions struct {
	Job   string
	Focus string
	// Privacy is the requested mode; an unknown or empty mode falls back
	// to the room's, then to local_summary_only.
	Privacy string
	// TestFixture marks the packet origin test_fixture instead of
	// navigation_api; only a Wire with AllowTestFixture accepts it.
	TestFixture bool
}

// Build makes the packet for one job about one focus node. It returns
// EINVALID for an unknown job and ENOTFOUND for an unknown focus. Every
// text in the packet is a projection (see project); nothing else in the
// room's properties is read into it.
func (r *Room) Build(ctx context.Context, o BuildOptions) (Packet, error) {
	if !knownJob(o.Job) {
		return Packet{}, custody.Errorf(custody.EINVALID, "unknown job %q: want one of %s", o.Job, strings.Join(Jobs(), ", "))
	}
	focus, err := r.Node(ctx, o.Focus)
	if err != nil {
		return Packet{}, err
	}
	cfg, err := r.Config(ctx)
	if err != nil {
		return Packet{}, err
	}
	mode, err := r.resolvePrivacy(ctx, o.Privacy, cfg)
	if err != nil {
		return Packet{}, err
	}
	sum, err := r.summarize(ctx, focus, cfg, mode)
	if err != nil {
		return Packet{}, fmt.Errorf("build %s packet: %w", o.Job, err)
	}
	return Packet{
		PacketVersion:     packetVersion,
		Job:               o.Job,
		RoomStage:         cmp.Or(cfg.Stage, defaultStage),
		Origin:            origin(o.TestFixture),
		PrivacyMode:       mode,
		ActiveContext:     activeContext(focus, cfg, mode),
		LocalGraphSummary: sum,
		Constraints:       Constraints{Privacy: constraintPrivacy, MaxTokens: constraintMaxTokens},
	}, nil
}

func origin(testFixture bool) string {
	if testFixture {
		return originTestFixture
	}
	return originNavigation
}

func activeContext(focus Node, cfg Config, mode string) ActiveContext {
	ac := ActiveContext{
		Operator:  cmp.Or(cfg.Operator, defaultOperator),
		FocusNode: FocusNode{ID: focus.ID, Type: focus.Type, Summary: project(summaryOf(focus.Properties), mode)},
	}
	if cfg.JTBD != "" {
		j := project(cfg.JTBD, mode)
		ac.JTBD = &j
	}
	return ac
}

// resolvePrivacy picks the requested mode when valid, else the room's when
// valid, else local_summary_only; allow_excerpts stands only when a user
// confirmed a decision granting it.
func (r *Room) resolvePrivacy(ctx context.Context, requested string, cfg Config) (string, error) {
	mode := localSummaryOnly
	switch {
	case validMode(requested):
		mode = requested
	case validMode(cfg.PrivacyMode):
		mode = cfg.PrivacyMode
	}
	if mode != allowExcerpts {
		return mode, nil
	}
	granted, err := r.excerptsGranted(ctx)
	if err != nil || !granted {
		return localSummaryOnly, err
	}
	return allowExcerpts, nil
}

func validMode(m string) bool {
	return m == localSummaryOnly || m == allowFilenames || m == allowExcerpts
}

// excerptsGranted reports whether a user confirmed a decision granting
// allow_excerpts.
func (r *Room) excerptsGranted(ctx context.Context) (bool, error) {
	var n int
	err := r.db.QueryRowContext(ctx, `SELECT count(*) FROM nodes WHERE type = 'decision'
		AND review_status IN ('confirmed', 'validated') AND confirmed_by NOT IN ('', 'brain')
		AND json_valid(properties) AND json_extract(properties, '$.grants_privacy_mode') = 'allow_excerpts'`).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("read privacy grants: %w", err)
	}
	return n > 0, nil
}

// summarize builds the local graph summary around focus.
func (r *Room) summarize(ctx context.Context, focus Node, cfg Config, mode string) (LocalGraphSummary, error) {
	now := r.now()
	hops, err := r.walk(ctx, focus.ID)
	if err != nil {
		return LocalGraphSummary{}, err
	}
	depths := make(map[string]int, len(hops)+1)
	for id, h := range hops {
		depths[id] = h.depth
	}
	depths[focus.ID] = 0
	if err := r.loadHops(ctx, hops); err != nil {
		return LocalGraphSummary{}, err
	}
	near := rank(hops, focus, now)
	s := LocalGraphSummary{
		NearestClaims:      claimProjections(near, mode, isClaim, topClaims),
		NearestAssumptions: claimProjections(near, mode, isAssumption, topAssumptions),
		Contradictions:     contradictions(near, focus.ID, mode),
	}
	if s.UnsupportedClaims, err = r.unsupported(ctx, near, mode); err != nil {
		return s, err
	}
	if s.RecentChanges, err = r.recentChanges(ctx, now); err != nil {
		return s, err
	}
	if s.BankedOpportunities, err = r.banked(ctx, depths, cfg.JTBDTags); err != nil {
		return s, err
	}
	s.FrameworkChainHint = chainHint(cfg.FrameworkChain, mode)
	return s, nil
}

func isClaim(n Node) bool      { return n.Type == "claim" || n.Type == "CausalClaim" }
func isAssumption(n Node) bool { return n.Type == "assumption" }

// claimProjections projects the first k hops whose node passes keep.
func claimProjections(near []*hop, mode string, keep func(Node) bool, k int) []ClaimProjection {
	out := []ClaimProjection{}
	for _, h := range near {
		if len(out) == k {
			break
		}
		if keep(h.node) {
			out = append(out, ClaimProjection{ID: h.id, Type: h.node.Type,
				Summary: project(summaryOf(h.node.Properties), mode), Depth: h.depth,
				EdgeTypeIn: h.edgeType, Score: h.score, ReviewStatus: h.node.ReviewStatus,
				LastSeenAt: h.node.UpdatedAt.UnixMilli()})
		}
	}
	return out
}

// contradictions projects the CONTRADICTS edges leaving the focus.
func contradictions(near []*hop, focus, mode string) []ContradictionProjection {
	out := []ContradictionProjection{}
	for _, h := range near {
		if len(out) == topContradictions {
			break
		}
		if h.depth == 1 && h.contradicts {
			c := ContradictionProjection{ClaimAID: focus, ClaimBID: h.id, Depth: 1}
			if h.explanation != "" {
				e := project(h.explanation, mode)
				c.Explanation = &e
			}
			out = append(out, c)
		}
	}
	return out
}

// unsupported projects the nearest claims that no SUPPORTS or EVIDENCES
// edge reaches.
func (r *Room) unsupported(ctx context.Context, near []*hop, mode string) ([]UnsupportedProjection, error) {
	var claims []string
	for _, h := range near {
		if isClaim(h.node) {
			claims = append(claims, h.id)
		}
	}
	supported, err := r.supported(ctx, claims)
	if err != nil {
		return nil, err
	}
	out := []UnsupportedProjection{}
	for _, h := range near {
		if len(out) == topUnsupported {
			break
		}
		if isClaim(h.node) && !supported[h.id] {
			out = append(out, UnsupportedProjection{ClaimID: h.id, Type: h.node.Type,
				ReviewStatus: h.node.ReviewStatus, LastSeenAt: h.node.UpdatedAt.UnixMilli(),
				Explanation: project(summaryOf(h.node.Properties), mode)})
		}
	}
	return out, nil
}

// supported returns the ids among ids that a SUPPORTS or EVIDENCES edge
// reaches.
func (r *Room) supported(ctx context.Context, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := r.db.QueryContext(ctx, `SELECT DISTINCT target FROM edges WHERE type IN ('SUPPORTS', 'EVIDENCES')
		AND target IN (`+placeholders(len(ids))+`)`, anySlice(ids)...)
	if err != nil {
		return nil, fmt.Errorf("find support: %w", err)
	}
	err = eachRow(rows, func() error {
		var id string
		err := rows.Scan(&id)
		out[id] = true
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("find support: %w", err)
	}
	return out, nil
}

// recentChanges projects the newest memory events of the last 24 hours.
func (r *Room) recentChanges(ctx context.Context, now time.Time) ([]RecentChangeProjection, error) {
	evs, err := r.Events(ctx, now.Add(-recentWindow), topRecent)
	if err != nil {
		return nil, err
	}
	out := make([]RecentChangeProjection, 0, len(evs))
	for _, e := range evs {
		c := RecentChangeProjection{ID: e.ID, EventType: e.EventType, CreatedAt: e.CreatedAt.UnixMilli()}
		if e.TargetNodeID != "" {
			c.TargetNodeID = &e.TargetNodeID
		}
		out = append(out, c)
	}
	return out, nil
}

// chainHint projects the room's framework chain, or returns nil.
func chainHint(h *FrameworkChainHint, mode string) *FrameworkChainHint {
	if h == nil {
		return nil
	}
	edges := slices.Clone(h.Edges)
	slices.SortStableFunc(edges, func(a, b ChainEdge) int { return cmp.Compare(hopOf(a), hopOf(b)) })
	edges = edges[:min(len(edges), maxChainEdges)]
	for i, e := range edges {
		if e.TransformDescription != nil {
			t := project(*e.TransformDescription, mode)
			edges[i].TransformDescription = &t
		}
	}
	return &FrameworkChainHint{Edges: edges, SliceScope: h.SliceScope,
		SliceRationale: project(h.SliceRationale, mode), BrainSnapshotID: h.BrainSnapshotID, FetchedAt: h.FetchedAt}
}

func hopOf(e ChainEdge) int {
	if e.HopDistance == nil {
		return unreachableDepth
	}
	return *e.HopDistance
}

// nodeTexts holds the properties a packet may draw on; everything else in
// a node's properties (bodies, transcripts, paths) is never decoded.
type nodeTexts struct {
	Summary     json.RawMessage `json:"summary"`
	Claim       json.RawMessage `json:"claim"`
	Title       json.RawMessage `json:"title"`
	Text        json.RawMessage `json:"text"`
	Explanation json.RawMessage `json:"explanation"`
	Tags        json.RawMessage `json:"tags"`
	HSI         json.RawMessage `json:"hsi"`
}

func textsOf(props []byte) nodeTexts {
	var t nodeTexts
	_ = json.Unmarshal(props, &t) // properties are checked to be an object on the way in
	return t
}

// summaryOf returns the first non-empty of summary, claim, title and text.
func summaryOf(props []byte) string {
	t := textsOf(props)
	for _, raw := range []json.RawMessage{t.Summary, t.Claim, t.Title, t.Text} {
		if s := stringOf(raw); s != "" {
			return s
		}
	}
	return ""
}

// explanationOf returns an edge's explanation property, or "".
func explanationOf(props string) string { return stringOf(textsOf([]byte(props)).Explanation) }

func stringOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return strings.TrimSpace(s)
}
