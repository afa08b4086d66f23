package peas

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
)

// approvalInput is request_approval's input.
type approvalInput struct {
	BriefID          string `json:"brief_id"`
	TargetOperatorID string `json:"target_operator_id"`
	PreferredChannel string `json:"preferred_channel,omitempty"`
	ExpiresInS       int    `json:"expires_in_s,omitempty"`
}

// approvalOutput is request_approval's output.
type approvalOutput struct {
	ApprovalRequestID string `json:"approval_request_id"`
	DispatchedAt      string `json:"dispatched_at"`
	ExpiresAt         string `json:"expires_at"`
	ChannelUsed       string `json:"channel_used"`
	Reasoning         string `json:"reasoning"`
}

// VMSAction is the sign update an approval authorises: issue_vms_update's
// arguments without the approval_request_id that cites the approval. The
// operator may edit Message before approving.
type VMSAction struct {
	BillboardID string `json:"billboard_id"`
	Message     string `json:"message"`
	DurationS   int    `json:"duration_s"`
}

// Request is what the system keeps of an approval request of the chain.
type Request struct {
	ApprovalRequestID string    `json:"approval_request_id"`
	BriefID           string    `json:"brief_id"`
	Trace             string    `json:"trace"`
	LocationID        string    `json:"location_id"`
	Severity          string    `json:"severity"`
	Operator          string    `json:"target_operator_id"`
	Proposed          VMSAction `json:"proposed"`
}

// approvalContext is what the operator sees beside the action.
type approvalContext struct {
	System           string    `json:"system"`
	BriefID          string    `json:"brief_id"`
	OpsBrief         string    `json:"ops_brief_text"`
	Recommended      string    `json:"recommended_action"`
	Urgency          string    `json:"urgency"`
	Signature        Signature `json:"signature"`
	TargetOperatorID string    `json:"target_operator_id"`
}

// requestApproval is the request_approval handler: it pages the operator
// through the approval service for the brief's recommended sign update. It
// posts nothing public.
func (s *System) requestApproval(ctx context.Context, call custody.Call) (json.RawMessage, error) {
	var in approvalInput
	if err := decodeArgs(call, &in); err != nil {
		return nil, err
	}
	if in.PreferredChannel == "" {
		in.PreferredChannel = approval.ConsoleChannel
	}
	if in.ExpiresInS == 0 {
		in.ExpiresInS = 300
	}
	var b Brief
	if err := s.getDoc(ctx, NSBriefs, in.BriefID, "brief", &b); err != nil {
		return nil, err
	}
	if err := s.checkWatch(ctx, b); err != nil {
		return nil, err
	}
	a, err := s.page(ctx, call, in, b)
	if err != nil {
		return nil, channelError(err, in.PreferredChannel)
	}
	req := Request{ApprovalRequestID: a.ID, BriefID: b.BriefID, Trace: call.Trace, LocationID: b.Signature.LocationID,
		Severity: b.Signature.Severity, Operator: in.TargetOperatorID,
		Proposed: VMSAction{BillboardID: b.Billboard, Message: b.Message, DurationS: b.DurationS}}
	if err := s.putDoc(ctx, NSRequests, a.ID, req); err != nil {
		return nil, err
	}
	return output(approvalOutput{
		ApprovalRequestID: a.ID, DispatchedAt: custody.FormatTime(a.CreatedAt), ExpiresAt: custody.FormatTime(a.ExpiresAt),
		ChannelUsed: a.Channel,
		Reasoning: fmt.Sprintf("Paged target_operator_id=%s on preferred_channel=%s to approve the recommended_action of brief_id=%s (urgency %s); nothing is posted until the operator approves; expires_in_s=%d.",
			in.TargetOperatorID, a.Channel, b.BriefID, b.Urgency, in.ExpiresInS),
	})
}

// channelError is the error of a request the approval service refused.
// The contract lets the agent ask for any of its channels, and the
// service refuses one it has no notifier for as invalid; for the agent
// that channel is unavailable here, not a malformed call: the console
// channel always is.
func channelError(err error, channel string) error {
	if custody.ErrorKind(err) != custody.EINVALID || channel == approval.ConsoleChannel {
		return err
	}
	return &custody.Error{Kind: custody.EUNAVAILABLE, Err: err,
		Message: fmt.Sprintf("approval channel %q is not configured here: no operator can be paged on it; ask on %q", channel, approval.ConsoleChannel)}
}

// page creates the approval of the brief's sign update.
func (s *System) page(ctx context.Context, call custody.Call, in approvalInput, b Brief) (custody.Approval, error) {
	args, err := json.Marshal(VMSAction{BillboardID: b.Billboard, Message: b.Message, DurationS: b.DurationS})
	if err != nil {
		return custody.Approval{}, fmt.Errorf("encode sign update: %w", err)
	}
	cx, err := json.Marshal(approvalContext{System: "peas", BriefID: b.BriefID, OpsBrief: b.Text, Recommended: b.RecommendedAction,
		Urgency: b.Urgency, Signature: b.Signature, TargetOperatorID: in.TargetOperatorID})
	if err != nil {
		return custody.Approval{}, fmt.Errorf("encode approval context: %w", err)
	}
	requester := call.Actor
	if requester == "" {
		requester = "peas"
	}
	return s.d.Approvals.Request(ctx, approval.Request{
		Tool: ToolVMS, Args: args, Trace: call.Trace, Requester: requester, Reason: b.RecommendedAction,
		Channel: in.PreferredChannel, TTL: time.Duration(in.ExpiresInS) * time.Second,
		Editable: []string{"message"}, Context: cx, ID: s.d.NewID(),
	})
}
