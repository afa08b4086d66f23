package brain

import (
	"regexp"
	"slices"
)

// SchemaID is the $id of the Brain Context Packet contract (seed 002).
const SchemaID = "https://mindrian-os.com/schemas/brain-packet/1.0"

// toolName is the MCP tool a Brain exposes.
const toolName = "brain_packet"

// packetVersion is the only packet_version the contract knows.
const packetVersion = "1.0"

// Jobs lists the twelve Brain jobs, a closed vocabulary.
var jobs = [...]string{
	"select_methodology",
	"suggest_next_move",
	"detect_contradiction",
	"summarize_neighborhood",
	"classify_room_budding",
	"rank_assumptions",
	"generate_feynman_explanation",
	"strengthen_minto",
	"prepare_investor_brief",
	"opportunity_react",
	"opportunity_reflect",
	"opportunity_rank",
}

// Jobs returns the twelve Brain jobs in contract order.
func Jobs() []string { return slices.Clone(jobs[:]) }

// knownJob reports whether job is one of the twelve.
func knownJob(job string) bool { return slices.Contains(jobs[:], job) }

// InRef returns the schema ref of a job's packet shape.
func InRef(job string) string { return SchemaID + "#/$defs/" + job + "/in" }

// outRef returns the schema ref of a job's reply shape.
func outRef(job string) string { return SchemaID + "#/$defs/" + job + "/out" }

// Privacy modes, from the most private to the least.
const (
	localSummaryOnly = "local_summary_only"
	allowFilenames   = "allow_filenames"
	allowExcerpts    = "allow_excerpts"
)

// Origins a packet may claim.
const (
	originNavigation  = "navigation_api"
	originTestFixture = "test_fixture"
)

// Review statuses of a node.
const (
	statusProposed  = "proposed"
	statusConfirmed = "confirmed"
	statusValidated = "validated"
	statusRejected  = "rejected"
)

// createdByBrain marks what the Brain proposed.
const createdByBrain = "brain"

// Memory event types written by this package.
const (
	eventPacketRejected     = "brain_packet_rejected"
	eventResponseRejected   = "brain_response_rejected"
	eventSuggestionReceived = "brain_suggestion_received"
	eventProposalConfirmed  = "proposal_confirmed"
	eventProposalRejected   = "proposal_rejected"
	eventRoomImported       = "room_imported"
)

// Soft failure reasons: Send returns one instead of an answer and nothing
// is ingested.
const (
	ReasonUnreachable    = "brain_unreachable"
	ReasonToolAbsent     = "brain_packet_tool_absent"
	ReasonResponseSchema = "response_schema_invalid"
	ReasonBrainError     = "brain_error"
)

// Ledger entry kinds written by the wire.
const (
	kindPacketSent    = "brain.packet.sent"
	kindPacketRefused = "brain.packet.refused"
	kindReplyReceived = "brain.reply.received"
	kindReplyRejected = "brain.reply.rejected"
	kindBrainSoftFail = "brain.send.failed"
)

// edgeWeight returns the neighbourhood weight of an edge type.
func edgeWeight(typ string) float64 {
	switch typ {
	case "CONTRADICTS", "INVALIDATES":
		return 1.0
	case "DEPENDS_ON", "ASSUMES":
		return 0.9
	case "SUPPORTS", "EVIDENCES":
		return 0.8
	case "INFORMS", "ENABLES":
		return 0.6
	case "CONVERGES", "MENTIONS_ENTITY":
		return 0.4
	default:
		return 0.3
	}
}

// proposableEdgeTypes is the allow-list of edge types the Brain may
// propose; any other type is reported rejected at ingestion.
func proposableEdgeTypes() []string {
	return []string{"ASSUMES", "CONTRADICTS", "CONVERGES", "DEPENDS_ON", "ENABLES",
		"EVIDENCES", "INFORMS", "INVALIDATES", "MENTIONS_ENTITY", "SUPPORTS"}
}

// Vocabulary patterns. Everything that leaves the room unhashed (ids, node
// and edge types, statuses, event types, the stage, the operator, tags)
// must match one, so that it cannot carry a path, an address or prose.
var (
	idPattern       = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`)
	typePattern     = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,63}$`)
	edgeTypePattern = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)
	eventPattern    = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	labelPattern    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9 _-]{0,29}$`)
	operatorPattern = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)
)

// maxTagLen caps a tag sent in banked_opportunities.
const maxTagLen = 30
