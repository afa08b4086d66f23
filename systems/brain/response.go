package brain

import "strconv"

// Response is a BrainResponse: the out shape of every job. It is advisory:
// the room ingests it as proposals only, and local scores stay
// authoritative.
type Response struct {
	JobID       string       `json:"job_id,omitempty"`
	Suggestions []Suggestion `json:"suggestions,omitempty"`
}

// Suggestion is one piece of advice from the Brain.
type Suggestion struct {
	SuggestionIndex      *int          `json:"suggestion_index,omitempty"`
	JobID                string        `json:"job_id,omitempty"`
	Summary              string        `json:"summary,omitempty"`
	Methodology          *string       `json:"methodology,omitempty"`
	Body                 string        `json:"body,omitempty"`
	Confidence           *float64      `json:"confidence,omitempty"`
	GraphUpdatesProposed []GraphUpdate `json:"graph_updates_proposed,omitempty"`
}

// GraphUpdate is an edge the Brain proposes.
type GraphUpdate struct {
	Source     string   `json:"source"`
	Target     string   `json:"target"`
	Type       string   `json:"type"`
	Confidence *float64 `json:"confidence,omitempty"`
}

// insightID names the node a suggestion becomes:
// brain_insight:<job>:<index>.
func insightID(job string, index int) string {
	return "brain_insight:" + job + ":" + strconv.Itoa(index)
}
