package mesh

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
)

// Ledger entry kinds of the broadcast step.
const (
	// EntryBroadcastStarted records the intent to publish an approved
	// broadcast, before the approval is consumed and anything is sent.
	EntryBroadcastStarted = "mesh.broadcast.started"
)

// Form is an operator's answer to a pending aggregation, from the mesh
// map's approval form.
type Form struct {
	ApprovalRequestID string   `json:"approval_request_id"`
	OperatorID        string   `json:"operator_id"`
	Audiences         []string `json:"target_audience"`
	// Text may shorten or soften the aggregation text; empty keeps it.
	Text string `json:"broadcast_text"`
	// Tier may lower the aggregation's severity; empty keeps it.
	Tier Tier   `json:"severity_tier"`
	Note string `json:"note,omitempty"`
}

// Approve checks the operator's order against the aggregation, records
// the decision through the approval service and publishes the broadcast.
// The form's text is the operator's: the order records what they changed
// in the proposed text as their edit (order.OperatorEdit), so a claim
// they wrote is theirs to broadcast and the decision entry carries it.
// Errors: ENOTFOUND for an aggregation the desk does not hold, EDENIED for
// an info aggregation or a raised tier, EINVALID for an order that fails
// its checks (unknown audience, text introducing a node, number or tier
// the aggregation did not say), and the approval service's errors. Every
// refusal is recorded.
func (d *Desk) Approve(ctx context.Context, f Form) (Broadcast, error) {
	c, err := d.Case(f.ApprovalRequestID)
	if err != nil {
		return Broadcast{}, d.refuse(ctx, f.ApprovalRequestID, f, err)
	}
	o := order{BroadcastText: f.Text, SeverityTier: f.Tier, TargetAudience: strings.Join(f.Audiences, ",")}
	if o.SeverityTier == "" {
		o.SeverityTier = c.Aggregation.SeverityTier
	}
	if o.BroadcastText == "" {
		o.BroadcastText = c.Aggregation.AggregationText
		if o.SeverityTier != c.Aggregation.SeverityTier {
			o.BroadcastText = Citations(o.BroadcastText)
		}
	}
	// What the operator typed is theirs: the order records it so.
	o.OperatorEdit = diffText(c.Aggregation.AggregationText, o.BroadcastText).String()
	if f.OperatorID == "" {
		return Broadcast{}, d.refuse(ctx, f.ApprovalRequestID, f, custody.Errorf(custody.EINVALID, "a broadcast needs the operator's id"))
	}
	if err := checkOrder(c.Aggregation, o); err != nil {
		return Broadcast{}, d.refuse(ctx, f.ApprovalRequestID, f, err)
	}
	args, err := marshal(o)
	if err != nil {
		return Broadcast{}, err
	}
	if _, err := d.cfg.Approvals.Decide(ctx, f.ApprovalRequestID, approval.Decision{
		Decision: approval.Approve, Operator: f.OperatorID, Note: f.Note, Arguments: args,
	}); err != nil {
		return Broadcast{}, d.refuse(ctx, f.ApprovalRequestID, f, err)
	}
	return d.Publish(ctx, f.ApprovalRequestID)
}

// Decline records an operator's refusal of an aggregation's broadcast.
func (d *Desk) Decline(ctx context.Context, id, operator, note string) error {
	if _, err := d.Case(id); err != nil {
		return err
	}
	if _, err := d.cfg.Approvals.Decide(ctx, id, approval.Decision{Decision: approval.Decline, Operator: operator, Note: note}); err != nil {
		return err
	}
	d.setStatus(id, CaseDeclined, "declined by "+operator)
	return nil
}

// Publish publishes the broadcast of an approved order: it re-checks the
// order as approved (an operator may have edited it in the console),
// records the intent, consumes the approval bound to the order's digest,
// and sends the broadcast to each audience. Without an approved, unused
// approval for exactly this order nothing is sent: EPENDING, EDENIED,
// EEXPIRED or ECONFLICT says why, and the refusal is recorded.
func (d *Desk) Publish(ctx context.Context, id string) (Broadcast, error) {
	c, err := d.Case(id)
	if err != nil {
		return Broadcast{}, d.refuse(ctx, id, nil, err)
	}
	a, err := d.cfg.Approvals.Get(ctx, id)
	if err != nil {
		return Broadcast{}, d.refuse(ctx, id, nil, err)
	}
	b, raw, _, err := d.broadcastOf(c.Aggregation, a)
	if err != nil {
		d.setStatus(id, CaseRefused, custody.ErrorMessage(err))
		return Broadcast{}, d.refuse(ctx, id, a.Arguments, err)
	}
	if err := d.send(ctx, b, raw); err != nil {
		return Broadcast{}, err
	}
	d.mu.Lock()
	if c := d.cases[id]; c != nil {
		c.Status, c.Broadcast = CaseBroadcast, &b
	}
	d.mu.Unlock()
	if d.cfg.OnBroadcast != nil {
		d.cfg.OnBroadcast(b)
	}
	return b, nil
}

// broadcastOf builds the broadcast an approval authorises, or says why it
// authorises none.
func (d *Desk) broadcastOf(agg Aggregation, a custody.Approval) (Broadcast, []byte, string, error) {
	if a.Tool != broadcastTool {
		return Broadcast{}, nil, "", custody.Errorf(custody.EDENIED, "approval %s is not a broadcast approval", a.ID)
	}
	digest, err := orderDigest(a.Arguments)
	if err != nil {
		return Broadcast{}, nil, "", &custody.Error{Kind: custody.EINVALID, Message: "approved order is not canonical JSON", Err: err}
	}
	if err := approval.Usable(a, digest, d.cfg.Now()); err != nil {
		return Broadcast{}, nil, "", err
	}
	var o order
	if err := json.Unmarshal(a.Arguments, &o); err != nil {
		return Broadcast{}, nil, "", &custody.Error{Kind: custody.EINVALID, Message: "approved order does not decode", Err: err}
	}
	if err := checkOrder(agg, o); err != nil {
		return Broadcast{}, nil, "", err
	}
	b := Broadcast{
		SchemaVersion: broadcastVersion, BroadcastTS: d.cfg.Now().UTC().Format("2006-01-02T15:04:05Z"),
		ApprovalRequestID: a.ID, OperatorID: a.Operator, BroadcastText: o.BroadcastText,
		SeverityTier: o.SeverityTier, TargetAudience: o.Audiences(),
	}
	raw, err := marshal(b)
	if err != nil {
		return Broadcast{}, nil, "", err
	}
	return b, raw, digest, d.cfg.Wire.Check(kindBroadcast, raw)
}

// send records the intent and uses the approval in one commit, then
// publishes to every audience. The caller checked that the approval
// authorises exactly this order; the commit holds only while it is still
// unused, so of two sends of one approval one is refused.
func (d *Desk) send(ctx context.Context, b Broadcast, raw []byte) error {
	refs := map[string]string{RefApproval: b.ApprovalRequestID}
	_, err := d.cfg.Wire.commit(ctx, EntryBroadcastStarted, d.cfg.Subjects.Broadcast("all"), raw, refs, approval.ConsumeChange(b.ApprovalRequestID))
	if approval.Refused(err) {
		return d.refuse(ctx, b.ApprovalRequestID, nil, err)
	}
	if err != nil {
		return err
	}
	for _, aud := range b.TargetAudience {
		if err := d.cfg.Wire.Send(ctx, kindBroadcast, d.cfg.Subjects.Broadcast(aud), raw, refs); err != nil {
			return err
		}
	}
	return nil
}

// refuse records a refused broadcast action and returns cause.
func (d *Desk) refuse(ctx context.Context, id string, detail any, cause error) error {
	e := *custody.AsError(cause)
	body, err := marshal(struct {
		ID         string              `json:"approval_request_id"`
		Reason     string              `json:"reason"`
		Kind       string              `json:"error_kind"`
		Violations []custody.Violation `json:"violations,omitempty"`
		Detail     any                 `json:"detail,omitempty"`
	}{id, e.Message, e.Kind, e.Violations, detail})
	if err != nil {
		return err
	}
	refs := map[string]string{}
	if id != "" {
		refs[RefApproval] = id
	}
	entry, err := d.cfg.Wire.append(ctx, EntryNotAllowed, d.cfg.Subjects.Broadcast("all"), body, refs)
	if err != nil {
		return err
	}
	e.Receipt = &custody.Receipt{Seq: entry.Seq, Hash: entry.Hash}
	return &e
}

// Sweep publishes the broadcasts of orders approved elsewhere (in the
// console inbox) and closes cases that were declined or expired. It
// returns the broadcasts it published.
func (d *Desk) Sweep(ctx context.Context) ([]Broadcast, error) {
	var out []Broadcast
	for _, c := range d.Cases() {
		if c.Status != CasePending {
			continue
		}
		id := c.Aggregation.ApprovalRequestID
		a, err := d.cfg.Approvals.Get(ctx, id)
		if err != nil {
			return out, err
		}
		switch {
		case a.Status == custody.ApprovalApproved:
			if b, err := d.Publish(ctx, id); err == nil {
				out = append(out, b)
			}
		case a.Status == custody.ApprovalDeclined:
			d.setStatus(id, CaseDeclined, "declined by "+a.Operator)
		case a.Status == custody.ApprovalExpired || !d.cfg.Now().Before(a.ExpiresAt):
			d.setStatus(id, CaseExpired, "")
		}
	}
	return out, nil
}

// Run sweeps every `every` until ctx ends.
func (d *Desk) Run(ctx context.Context, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			_, _ = d.Sweep(ctx)
		}
	}
}

// Citations drops an aggregation text's first sentence (its sector and
// severity) and keeps what the nodes reported: the text a lowered
// broadcast starts from, since it must not state the higher severity.
func Citations(text string) string {
	if _, rest, ok := strings.Cut(text, ". "); ok && len(rest) >= 20 {
		return rest
	}
	return text
}
