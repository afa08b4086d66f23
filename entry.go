package custody

import "encoding/json"

// Entry is one record on the evidence ledger. Seq, Prev and Hash are set by
// the store when the entry is appended.
//
// hash = SHA-256(prev_hash_bytes ‖ JCS(entry without "hash")); the first
// entry's prev is 32 zero bytes. Body holds the exact JSON as received or
// produced; BodySHA256 is the SHA-256 of those exact bytes.
type Entry struct {
	Seq   int64  `json:"seq"`
	At    string `json:"at"`
	Kind  string `json:"kind"`
	Trace string `json:"trace"`
	Actor string `json:"actor"`
	// Refs thread a chain of custody: approval_request_id, brief_id,
	// vms_update_id, ... Never nil on the ledger (an empty object).
	Refs       map[string]string `json:"refs"`
	Body       json.RawMessage   `json:"body"`
	BodySHA256 string            `json:"body_sha256"`
	Prev       string            `json:"prev"`
	Hash       string            `json:"hash"`
}

// Checkpoint is a signed statement of the ledger's size and head hash.
// Sig is the base64 ed25519 signature over the checkpoint's signed bytes
// (see package ledger).
type Checkpoint struct {
	// Ledger is the id of the ledger the checkpoint is of (32 lowercase
	// hex digits); empty in checkpoints written before ledgers had ids.
	Ledger string `json:"ledger,omitempty"`
	Size   int64  `json:"size"`
	Head   string `json:"head"`
	At     string `json:"at"`
	Sig    string `json:"sig"`
}

// Query selects ledger entries. Zero fields select everything.
type Query struct {
	After int64 // entries with seq > After
	Limit int   // at most Limit entries; 0 means a store default
	Trace string
	Kind  string
	// Refs selects entries whose refs hold every given key and value.
	Refs map[string]string
}

// Ledger entry kinds written by the core.
const (
	KindCallStarted   = "call.started"
	KindCallSucceeded = "call.succeeded"
	KindCallRefused   = "call.refused"
	KindCallFailed    = "call.failed"
	// KindCallCancelled ends a call whose caller cancelled it while its
	// tool ran, with no side effect to doubt (a READ).
	KindCallCancelled = "call.cancelled"
	// KindCallOutcomeUnknown ends a call with a side effect whose request
	// reached its tool and whose answer never came (cancelled, timed out,
	// the tool's connection broken): it may have taken effect.
	KindCallOutcomeUnknown = "call.outcome_unknown"
	// KindCallInterrupted ends, at the next start of the gateway, a call
	// whose call.started has no outcome on the ledger: the process that
	// ran it stopped (a crash, a SIGKILL, a power loss) before recording
	// one. Its refs name the intent it closes (intent_seq, intent_hash);
	// its outcome is unknown: the side effect may have taken place.
	KindCallInterrupted  = "call.interrupted"
	KindApprovalRequest  = "approval.requested"
	KindApprovalDecided  = "approval.decided"
	KindApprovalExpired  = "approval.expired"
	KindApprovalEscalate = "approval.escalated"
	KindApprovalVoided   = "approval.voided" // a re-pin of its tool voided the approval
	KindNotifyFailed     = "notify.failed"
	// KindGrantCreated records a grant: the operator, the agent, the
	// tool, the schema of the arguments it allows, its limits and the
	// tool definition it was made under.
	KindGrantCreated = "grant.created"
	// KindGrantRevoked records the revocation of a grant.
	KindGrantRevoked   = "grant.revoked"
	KindContractBreach = "contract.breach"
)
