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
	// EINVALID.
	Append(ctx context.Context, e Entry) (Entry, error)
	// Head returns the receipt of the last entry; Seq 0 when empty.
	Head(ctx context.Context) (Receipt, error)
	// Entries returns entries matching q in seq order.
	Entries(ctx context.Context, q Query) ([]Entry, error)
	// Checkpoints returns every signed checkpoint in size order.
	Checkpoints(ctx context.Context) ([]Checkpoint, error)
	// PublicKey returns the key that verifies the checkpoints.
	PublicKey() ed25519.PublicKey
	Close() error
}

// ApprovalStore keeps approval requests.
type ApprovalStore interface {
	// CreateApproval stores a new request; ECONFLICT if the id exists.
	CreateApproval(ctx context.Context, a Approval) error
	// Approval returns one request; ENOTFOUND if absent.
	Approval(ctx context.Context, id string) (Approval, error)
	// Approvals lists requests, newest first; status "" lists all.
	Approvals(ctx context.Context, status ApprovalStatus) ([]Approval, error)
	// UpdateApproval applies fn to the stored request atomically: fn sees
	// the current value and its changes are saved only if it returns nil.
	// fn may run inside the store's writer: it must be quick and must not
	// call the store.
	UpdateApproval(ctx context.Context, id string, fn func(*Approval) error) (Approval, error)
}

// StateStore keeps small JSON documents by namespace and key: budgets,
// registries of signs, the latest advisories. It is not evidence: the
// ledger is.
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
