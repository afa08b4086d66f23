package custody

import (
	"encoding/json"
	"time"
)

// ApprovalStatus is where an approval request stands.
type ApprovalStatus string

// Approval statuses. An approved approval becomes consumed when the one call
// it authorised runs.
const (
	ApprovalPending  ApprovalStatus = "pending"
	ApprovalApproved ApprovalStatus = "approved"
	ApprovalDeclined ApprovalStatus = "declined"
	ApprovalExpired  ApprovalStatus = "expired"
	ApprovalConsumed ApprovalStatus = "consumed"
	// ApprovalVoided ends a request, pending or approved and unused, that
	// was asked under a tool definition an operator has since replaced by
	// a re-pin: it can never authorise anything again.
	ApprovalVoided ApprovalStatus = "voided"
)

// Approval is a request for a human to authorise one exact action: the tool
// and its canonical arguments, bound by Digest.
type Approval struct {
	ID        string          `json:"approval_request_id"`
	Status    ApprovalStatus  `json:"status"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	// Digest is hex SHA-256 of JCS({"tool":Tool,"arguments":Arguments}).
	Digest    string    `json:"action_digest"`
	Trace     string    `json:"trace_id"`
	Requester string    `json:"requester"`
	Reason    string    `json:"reason"`
	Channel   string    `json:"channel"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// Set by the decision.
	DecidedAt *time.Time `json:"decided_at,omitempty"`
	Operator  string     `json:"operator_id,omitempty"`
	Note      string     `json:"note,omitempty"`
	// ConsumedSeq is the ledger seq of the call that used the approval.
	ConsumedSeq int64 `json:"consumed_seq,omitempty"`
	// Escalations counts the escalations to a next channel, each made
	// while the request was still pending.
	Escalations int `json:"escalations,omitempty"`
	// Editable names top-level string arguments an operator may edit before
	// approving (a sign's message, say). An edit rebinds Digest to the
	// edited arguments: what was approved is what may run.
	Editable []string `json:"editable,omitempty"`
	// Context carries domain detail shown to the operator (a brief, an
	// aggregation), never used for the digest.
	Context json.RawMessage `json:"context,omitempty"`
	// Definition is the SHA-256 of the tool definition the approval was
	// requested under (RefToolDefinition), "" for a tool custody defines
	// itself. An approval authorises its action under that definition
	// only: once the tool is re-pinned to another, it is void.
	Definition string `json:"tool_definition_sha256,omitempty"`
	// Grant is the grant the operator made when approving, besides this
	// call: a bounded class of further calls (see Grant).
	Grant string `json:"grant_id,omitempty"`
}

// RefToolDefinition is the ref under which a call's entries name the
// SHA-256 of the definition of the tool that ran (an upstream tool, as
// pinned on the ledger).
const RefToolDefinition = "tool_definition_sha256"
