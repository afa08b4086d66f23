package replay

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"maps"
	"strconv"

	"github.com/custody-dev/custody"
)

// memory is the store a replay's gateway decides against: the state
// (trace counts, rate windows, resource bindings) in memory, no
// approvals, and a ledger that takes nothing. Nothing a replay does
// reaches the store it reads.
type memory struct {
	state map[[2]string]json.RawMessage
}

var _ custody.Store = (*memory)(nil)

func newMemory() *memory { return &memory{state: map[[2]string]json.RawMessage{}} }

// errWrite is the answer to a write of the ledger or the approvals.
var errWrite = custody.Errorf(custody.EUNAVAILABLE, "a replay writes nothing")

// apply applies the state changes a live gateway commits with a call's
// entry. A replay decides one call at a time, so no change's limit can be
// passed by another's; what is not state (an approval's use) is left out.
func (m *memory) apply(changes []custody.Change) {
	for _, c := range changes {
		switch c.Op {
		case custody.OpPutState:
			m.state[[2]string{c.NS, c.Key}] = c.Doc
		case custody.OpIncrState:
			m.IncrState(context.Background(), c.NS, c.Key, c.Delta)
		}
	}
}

// State implements custody.StateStore.
func (m *memory) State(_ context.Context, ns, key string) (json.RawMessage, error) {
	doc, ok := m.state[[2]string{ns, key}]
	if !ok {
		return nil, custody.Errorf(custody.ENOTFOUND, "no state %s/%s", ns, key)
	}
	return doc, nil
}

// PutState implements custody.StateStore.
func (m *memory) PutState(_ context.Context, ns, key string, doc json.RawMessage) error {
	m.state[[2]string{ns, key}] = doc
	return nil
}

// States implements custody.StateStore.
func (m *memory) States(_ context.Context, ns string) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	for k, v := range maps.All(m.state) {
		if k[0] == ns {
			out[k[1]] = v
		}
	}
	return out, nil
}

// IncrState implements custody.StateStore.
func (m *memory) IncrState(_ context.Context, ns, key string, delta int64) (int64, error) {
	k := [2]string{ns, key}
	n, _ := strconv.ParseInt(string(m.state[k]), 10, 64)
	n += delta
	m.state[k] = json.RawMessage(strconv.FormatInt(n, 10))
	return n, nil
}

// Approval implements custody.ApprovalStore: a replay has none.
func (m *memory) Approval(context.Context, string) (custody.Approval, error) {
	return custody.Approval{}, custody.Errorf(custody.ENOTFOUND, "a replay has no approvals")
}

// Approvals implements custody.ApprovalStore.
func (m *memory) Approvals(context.Context, custody.ApprovalStatus) ([]custody.Approval, error) {
	return nil, nil
}

// ApprovalsFor implements custody.ApprovalStore.
func (m *memory) ApprovalsFor(context.Context, string, string) ([]custody.Approval, error) {
	return nil, nil
}

// ApprovalsOf implements custody.ApprovalStore.
func (m *memory) ApprovalsOf(context.Context, string, string) ([]custody.Approval, error) {
	return nil, nil
}

// Append implements custody.Ledger: it refuses.
func (m *memory) Append(context.Context, custody.Entry) (custody.Entry, error) {
	return custody.Entry{}, errWrite
}

// Commit implements custody.Ledger: it refuses.
func (m *memory) Commit(context.Context, custody.Entry, ...custody.Change) (custody.Entry, error) {
	return custody.Entry{}, errWrite
}

// Head implements custody.Ledger: empty.
func (m *memory) Head(context.Context) (custody.Receipt, error) { return custody.Receipt{}, nil }

// Entries implements custody.Ledger: none.
func (m *memory) Entries(context.Context, custody.Query) ([]custody.Entry, error) { return nil, nil }

// Checkpoints implements custody.Ledger: none.
func (m *memory) Checkpoints(context.Context) ([]custody.Checkpoint, error) { return nil, nil }

// PublicKey implements custody.Ledger: none.
func (m *memory) PublicKey() ed25519.PublicKey { return nil }

// Close implements custody.Ledger.
func (m *memory) Close() error { return nil }
