package brain

import (
	"crypto/sha256"
	"encoding/hex"
	"math"

	"golang.org/x/text/unicode/norm"
)

// Packet is a Brain Context Packet (the in shape of every job). Build is
// the only way one is made; Wire.Send validates its exact bytes.
type Packet struct {
	PacketVersion     string            `json:"packet_version"`
	Job               string            `json:"job"`
	RoomStage         string            `json:"room_stage"`
	Origin            string            `json:"origin"`
	PrivacyMode       string            `json:"privacy_mode"`
	ActiveContext     ActiveContext     `json:"active_context"`
	LocalGraphSummary LocalGraphSummary `json:"local_graph_summary"`
	Constraints       Constraints       `json:"constraints"`
}

// ActiveContext says what the user is working on.
type ActiveContext struct {
	// JTBD is the projected job to be done, or nil.
	JTBD      *string   `json:"jtbd"`
	Operator  string    `json:"operator"`
	FocusNode FocusNode `json:"focus_node"`
}

// FocusNode is the node the packet is about.
type FocusNode struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Summary string `json:"summary"`
}

// LocalGraphSummary is the projected neighbourhood of the focus node.
type LocalGraphSummary struct {
	NearestClaims       []ClaimProjection         `json:"nearest_claims"`
	NearestAssumptions  []ClaimProjection         `json:"nearest_assumptions"`
	Contradictions      []ContradictionProjection `json:"contradictions"`
	UnsupportedClaims   []UnsupportedProjection   `json:"unsupported_claims"`
	RecentChanges       []RecentChangeProjection  `json:"recent_changes"`
	BankedOpportunities BankedOpportunities       `json:"banked_opportunities"`
	// FrameworkChainHint is absent unless the room holds one.
	FrameworkChainHint *FrameworkChainHint `json:"framework_chain_hint,omitempty"`
}

// ClaimProjection is a claim or an assumption near the focus.
type ClaimProjection struct {
	ID           string  `json:"id"`
	Type         string  `json:"type"`
	Summary      string  `json:"summary"`
	Depth        int     `json:"depth"`
	EdgeTypeIn   string  `json:"edgeTypeIn"`
	Score        float64 `json:"score"`
	ReviewStatus string  `json:"reviewStatus"`
	// LastSeenAt is the node's last update, Unix milliseconds.
	LastSeenAt int64 `json:"lastSeenAt"`
}

// ContradictionProjection is a CONTRADICTS edge leaving the focus.
type ContradictionProjection struct {
	ClaimAID    string  `json:"claimAId"`
	ClaimBID    string  `json:"claimBId"`
	Depth       int     `json:"depth"`
	Explanation *string `json:"explanation"`
}

// UnsupportedProjection is a claim no SUPPORTS or EVIDENCES edge reaches.
type UnsupportedProjection struct {
	ClaimID      string `json:"claimId"`
	Type         string `json:"type"`
	ReviewStatus string `json:"reviewStatus"`
	LastSeenAt   int64  `json:"lastSeenAt"`
	Explanation  string `json:"explanation"`
}

// RecentChangeProjection is a memory event of the last 24 hours.
type RecentChangeProjection struct {
	ID           string  `json:"id"`
	EventType    string  `json:"eventType"`
	TargetNodeID *string `json:"targetNodeId"`
	// CreatedAt is Unix milliseconds.
	CreatedAt int64 `json:"createdAt"`
}

// BankedOpportunities counts the room's live opportunities and shows the
// best three, by hash only.
type BankedOpportunities struct {
	Count int                 `json:"count"`
	Items []BankedOpportunity `json:"items"`
}

// BankedOpportunity is one opportunity, identified by IDHash.
type BankedOpportunity struct {
	IDHash         string   `json:"id_hash"`
	Tags           []string `json:"tags"`
	HSIBand        string   `json:"hsi_band"`
	CompositeScore float64  `json:"composite_score"`
}

// Constraints tell the Brain how to answer.
type Constraints struct {
	Privacy   string `json:"privacy"`
	MaxTokens int    `json:"max_tokens"`
}

// FrameworkChainHint is a slice of a framework chain fetched from the Brain.
type FrameworkChainHint struct {
	Edges           []ChainEdge `json:"edges"`
	SliceScope      int         `json:"slice_scope"`
	SliceRationale  string      `json:"slice_rationale"`
	BrainSnapshotID *string     `json:"brain_snapshot_id,omitempty"`
	FetchedAt       string      `json:"fetched_at"`
}

// ChainEdge is one edge of a framework chain.
type ChainEdge struct {
	From                 *string  `json:"from"`
	To                   *string  `json:"to"`
	Confidence           *float64 `json:"confidence,omitempty"`
	TransformDescription *string  `json:"transform_description,omitempty"`
	HopDistance          *int     `json:"hop_distance"`
}

// Packet constraints sent with every packet.
const (
	constraintPrivacy   = "no_raw_artifact_text"
	constraintMaxTokens = 1200
)

// Projection limits.
const (
	// maxExcerpt is the longest excerpt, in characters.
	maxExcerpt = 120
	// hashedLen is the length of a hashed projection: "sha256:" + 64 hex.
	hashedLen = 71
)

// project returns the projection of a local text under mode: under
// allow_excerpts the NFC text itself, or its first 117 characters and
// "..." when longer than 120; under every other mode "sha256:" and the hex
// SHA-256 of the NFC text.
func project(text, mode string) string {
	text = norm.NFC.String(text)
	if mode != allowExcerpts {
		sum := sha256.Sum256([]byte(text))
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	r := []rune(text)
	if len(r) <= maxExcerpt {
		return text
	}
	return string(r[:maxExcerpt-3]) + "..."
}

// idHash returns the first 12 hex digits of SHA-256(id).
func idHash(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:6])
}

// hsiBand returns high for hsi ≥ 70, medium for ≥ 40, else low.
func hsiBand(hsi float64) string {
	switch {
	case hsi >= 70:
		return "high"
	case hsi >= 40:
		return "medium"
	default:
		return "low"
	}
}

// round3 rounds a score to three decimals.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
