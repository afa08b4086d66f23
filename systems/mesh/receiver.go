package mesh

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/custody-dev/custody"
)

// ApprovalReader reads approvals; *approval.Service implements it.
type ApprovalReader interface {
	Get(ctx context.Context, id string) (custody.Approval, error)
}

// Receiver is a broadcast audience (a ground crew, the route signage): it
// admits the broadcasts published to it. With Approvals set it also
// refuses any broadcast that no operator approved exactly as it reads.
type Receiver struct {
	Audience  string
	Wire      *Wire
	Subjects  Subjects
	Approvals ApprovalReader

	mu       sync.Mutex
	accepted []Broadcast
}

// Listen subscribes the receiver to its audience's subject.
func (r *Receiver) Listen(ctx context.Context) (Subscription, error) {
	return r.Wire.Transport.Subscribe(r.Subjects.Broadcast(r.Audience), func(_ context.Context, m Msg) {
		_, _ = r.Receive(ctx, m)
	})
}

// Receive admits one broadcast; a refused one is recorded and dropped.
func (r *Receiver) Receive(ctx context.Context, m Msg) (Broadcast, error) {
	b, err := r.admitSigned(ctx, m)
	if err != nil {
		return Broadcast{}, r.Wire.Refuse(ctx, kindBroadcast, "receive", m.Subject, m.Data, signedRefs(nil, m), err)
	}
	refs := signedRefs(map[string]string{RefApproval: b.ApprovalRequestID}, m)
	if err := r.Wire.Received(ctx, kindBroadcast, m.Subject, m.Data, refs); err != nil {
		return Broadcast{}, err
	}
	r.mu.Lock()
	r.accepted = append(r.accepted, b)
	r.mu.Unlock()
	return b, nil
}

// Accepted returns the broadcasts admitted so far.
func (r *Receiver) Accepted() []Broadcast {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.accepted)
}

// admitSigned admits a broadcast signed by a desk on the roster.
func (r *Receiver) admitSigned(ctx context.Context, m Msg) (Broadcast, error) {
	if _, err := r.Wire.verify(kindBroadcast, m); err != nil {
		return Broadcast{}, err
	}
	return r.admit(ctx, m)
}

func (r *Receiver) admit(ctx context.Context, m Msg) (Broadcast, error) {
	var b Broadcast
	if err := r.Wire.Check(kindBroadcast, m.Data); err != nil {
		return b, err
	}
	if err := json.Unmarshal(m.Data, &b); err != nil {
		return b, &custody.Error{Kind: custody.EINVALID, Message: "broadcast does not decode", Err: err}
	}
	if !slices.Contains(b.TargetAudience, r.Audience) {
		return b, custody.Errorf(custody.EINVALID, "broadcast %s does not target %s", b.ApprovalRequestID, r.Audience)
	}
	if r.Approvals == nil {
		return b, nil
	}
	return b, r.approved(ctx, b)
}

// approved checks that an operator approved exactly this broadcast: the
// approval exists, was approved and used, by the operator it names, for
// the order the broadcast carries.
func (r *Receiver) approved(ctx context.Context, b Broadcast) error {
	a, err := r.Approvals.Get(ctx, b.ApprovalRequestID)
	if err != nil {
		return custody.Errorf(custody.EDENIED, "broadcast cites approval %s, which does not exist", b.ApprovalRequestID)
	}
	if a.Status != custody.ApprovalConsumed && a.Status != custody.ApprovalApproved {
		return custody.Errorf(custody.EDENIED, "broadcast cites approval %s, which is %s", a.ID, a.Status)
	}
	if a.Tool != broadcastTool || a.Operator != b.OperatorID {
		return custody.Errorf(custody.EDENIED, "broadcast does not match approval %s", a.ID)
	}
	var o order
	if err := json.Unmarshal(a.Arguments, &o); err != nil {
		return custody.Errorf(custody.EDENIED, "approval %s holds no broadcast order", a.ID)
	}
	if o.BroadcastText != b.BroadcastText || o.SeverityTier != b.SeverityTier || !slices.Equal(o.Audiences(), b.TargetAudience) {
		return custody.Errorf(custody.EDENIED, "broadcast differs from the order approved as %s", a.ID)
	}
	return nil
}
