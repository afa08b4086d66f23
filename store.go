package custody

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
)

// Ledger is the append-only evidence ledger.
type Ledger interface {
	// Append seals e onto the chain (setting Seq, Prev, Hash, and At when
	// empty) and returns its receipt. Append MUST NOT return until the entry
	// and the chain head are durable. On error nothing was appended and the
	// chain is unchanged. Bodies that are not valid JSON, hold duplicate
	// keys or integers beyond ±2^53 (see package ledger) are refused with
	// EINVALID. Append(ctx, e) is Commit(ctx, e) without changes.
	Append(ctx context.Context, e Entry) (Entry, error)
	// Commit seals e onto the chain and applies changes, the state changes
	// e is the evidence of, in one atomic and durable commit: either the
	// entry and every change are written, or nothing is. The changes apply
	// in order, each seeing the ones before it, to the approvals and state
	// kept in the same store as the ledger (see Store).
	//
	// A change whose condition does not hold (an approval that is no
	// longer in the status the change expects, a counter that would pass
	// its limit, an approval id that exists already) fails the commit:
	// nothing is written, not the entry nor any change, and the error is
	// the change's Refusal when set, else a *Error of the change's kind
	// (ECONFLICT or EDENIED, see the Change constructors). A change that is
	// malformed (no key, an unknown Op, a document that is not JSON) is
	// EINVALID and writes nothing either. A storage failure is
	// EUNAVAILABLE and writes nothing. Concurrent commits are serialised:
	// of two conditional changes on the same key only one can win.
	//
	// Like Append, Commit returns only once the entry and its changes are
	// durable. A ledger kept apart from any approval or state store
	// refuses every change with EINVALID.
	Commit(ctx context.Context, e Entry, changes ...Change) (Entry, error)
	// Head returns the receipt of the last entry; Seq 0 when empty.
	Head(ctx context.Context) (Receipt, error)
	// Entries returns entries matching q in seq order. It serves people
	// reading the ledger (the console, the API, the CLI); the gateway's
	// policy never depends on it: it reads state.
	Entries(ctx context.Context, q Query) ([]Entry, error)
	// Checkpoints returns every signed checkpoint in size order.
	Checkpoints(ctx context.Context) ([]Checkpoint, error)
	// PublicKey returns the key that verifies the checkpoints.
	PublicKey() ed25519.PublicKey
	Close() error
}

// ApprovalStore reads approval requests. Every change of a request (its
// creation, a decision, a use, an expiry) is evidence: it is written with
// the entry that records it, through Ledger.Commit.
type ApprovalStore interface {
	// Approval returns one request; ENOTFOUND if absent.
	Approval(ctx context.Context, id string) (Approval, error)
	// Approvals lists requests, newest first; status "" lists all.
	Approvals(ctx context.Context, status ApprovalStatus) ([]Approval, error)
	// ApprovalsFor lists the requests of trace that were asked for the
	// action with the given digest, or bound to it by an operator's edit,
	// newest first: a keyed lookup, whose cost does not grow with the
	// ledger.
	ApprovalsFor(ctx context.Context, trace, digest string) ([]Approval, error)
	// ApprovalsOf lists the requests requester asked for the action with
	// the given digest, or bound to it by an operator's edit, in any
	// trace, newest first: a keyed lookup like ApprovalsFor.
	ApprovalsOf(ctx context.Context, requester, digest string) ([]Approval, error)
}

// StateStore keeps small JSON documents by namespace and key: budgets,
// the refs custody links check, registries of signs, the latest
// advisories. It is not evidence: the ledger is. State that the ledger
// justifies is written with its entry through Ledger.Commit.
type StateStore interface {
	// State returns the document; ENOTFOUND if absent.
	State(ctx context.Context, ns, key string) (json.RawMessage, error)
	// PutState stores the document.
	PutState(ctx context.Context, ns, key string, doc json.RawMessage) error
	// States lists the documents of a namespace by key.
	States(ctx context.Context, ns string) (map[string]json.RawMessage, error)
	// IncrState adds delta to an integer counter and returns its new value.
	IncrState(ctx context.Context, ns, key string, delta int64) (int64, error)
}

// Store is a whole custody store: the ledger, the approvals and the state
// in one database, so that Ledger.Commit can write an entry and the state
// it justifies in one transaction. Every implementation runs the
// conformance suite in package store/storetest.
type Store interface {
	Ledger
	ApprovalStore
	StateStore
}

// ChangeOp names the operation of a Change. The set is closed: a store
// refuses an Op it does not know with EINVALID.
type ChangeOp int

// Change operations.
const (
	// OpPutState stores Doc under NS and Key, replacing any document.
	OpPutState ChangeOp = iota + 1
	// OpIncrState adds Delta to the integer counter under NS and Key
	// (absent counts as 0). With Limit > 0 a sum above Limit fails the
	// commit with EDENIED. A document that is not an integer, or a sum
	// that overflows, is EINVALID.
	OpIncrState
	// OpCreateApproval stores Approval as a new request; ECONFLICT if its
	// id exists.
	OpCreateApproval
	// OpUpdateApproval replaces the stored request Approval.ID with
	// Approval if its stored status is From; ECONFLICT otherwise, and
	// ENOTFOUND if there is no such request.
	OpUpdateApproval
	// OpConsumeApproval marks the request ID consumed by the committed
	// entry (Status consumed, ConsumedSeq the entry's seq) if it is
	// approved and unused; ECONFLICT otherwise, ENOTFOUND if absent.
	OpConsumeApproval
)

// Change is one state change committed with a ledger entry. Build it with
// the functions below; a store reads the fields its Op names.
type Change struct {
	Op ChangeOp
	// NS and Key address a state document (OpPutState, OpIncrState).
	NS, Key string
	// Doc is the document of OpPutState: valid JSON.
	Doc json.RawMessage
	// Delta and Limit are the addend and the ceiling of OpIncrState.
	Delta, Limit int64
	// Approval is the request of OpCreateApproval and OpUpdateApproval.
	Approval Approval
	// From is the status OpUpdateApproval requires.
	From ApprovalStatus
	// ID names the request of OpConsumeApproval.
	ID string
	// Refusal, when set, is the error Commit returns when the change's
	// condition does not hold, in place of the store's own.
	Refusal *Error
}

// PutState stores doc under ns and key.
func PutState(ns, key string, doc json.RawMessage) Change {
	return Change{Op: OpPutState, NS: ns, Key: key, Doc: doc}
}

// IncrState adds delta to the counter under ns and key; with limit > 0 a
// sum above limit fails the commit with EDENIED.
func IncrState(ns, key string, delta, limit int64) Change {
	return Change{Op: OpIncrState, NS: ns, Key: key, Delta: delta, Limit: limit}
}

// CreateApproval stores a as a new request; ECONFLICT if its id exists.
func CreateApproval(a Approval) Change {
	return Change{Op: OpCreateApproval, Approval: a}
}

// UpdateApproval replaces the request a.ID with a if its stored status is
// from; ECONFLICT otherwise.
func UpdateApproval(a Approval, from ApprovalStatus) Change {
	return Change{Op: OpUpdateApproval, Approval: a, From: from}
}

// ConsumeApproval marks the approved, unused request id consumed by the
// committed entry; ECONFLICT otherwise.
func ConsumeApproval(id string) Change {
	return Change{Op: OpConsumeApproval, ID: id}
}

// Else returns c with the error Commit returns when c's condition does not
// hold.
func (c Change) Else(e *Error) Change {
	c.Refusal = e
	return c
}
