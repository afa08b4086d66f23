package custody

import (
	"encoding/json"
	"time"
)

// GrantStatus is where a grant stands at a given time.
type GrantStatus string

// Grant statuses. Only an active grant authorises a call; the others say
// why a grant no longer does.
const (
	GrantActive  GrantStatus = "active"
	GrantUsedUp  GrantStatus = "used_up"
	GrantExpired GrantStatus = "expired"
	GrantRevoked GrantStatus = "revoked"
	// GrantVoid is a grant made under another definition of its tool than
	// the one now pinned: a re-pin voids it.
	GrantVoid GrantStatus = "void"
)

// Grant is an operator's approval of a bounded class of calls: the calls
// of one agent to one tool whose arguments match a JSON Schema, at most
// MaxUses of them and only before ExpiresAt. A grant stands in for the
// human decision only: every other step of the gateway (the tool's
// contract, its policy, its budgets) still checks each call.
type Grant struct {
	ID string `json:"grant_id"`
	// Operator is the operator who made the grant.
	Operator string `json:"operator_id"`
	// Agent is the one principal whose calls the grant covers.
	Agent string `json:"agent"`
	Tool  string `json:"tool"`
	// Arguments is the JSON Schema (draft 2020-12) a call's arguments
	// must match for the grant to cover it.
	Arguments json.RawMessage `json:"arguments"`
	// MaxUses bounds the calls the grant authorises; 0 bounds them by
	// ExpiresAt alone.
	MaxUses int64 `json:"max_uses,omitempty"`
	// ExpiresAt ends the grant; nil bounds it by MaxUses alone.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// Definition is the SHA-256 of the tool definition the grant was made
	// under (RefToolDefinition), "" for a tool custody defines itself. A
	// grant covers calls of that definition only.
	Definition string `json:"tool_definition_sha256,omitempty"`
	// Approval is the held call whose decision made the grant.
	Approval string `json:"approval_request_id,omitempty"`
	// Trace is the trace of that call: the grant's entries are in it.
	Trace     string    `json:"trace_id"`
	Note      string    `json:"note,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// Set by a revocation.
	RevokedAt    *time.Time `json:"revoked_at,omitempty"`
	RevokedBy    string     `json:"revoked_by,omitempty"`
	RevokeReason string     `json:"revoke_reason,omitempty"`
	// Uses counts the calls the grant authorised, as read.
	Uses int64 `json:"uses"`
	// Status is where the grant stood when it was read.
	Status GrantStatus `json:"status"`
}

// RefGrant is the ref under which the entries of a call a grant
// authorised, and the grant's own entries, name the grant.
const RefGrant = "grant"

// NoGrants returns the ToolSpec.Grants of a tool that forbids grants.
func NoGrants() *bool {
	no := false
	return &no
}
