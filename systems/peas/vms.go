package peas

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/custody-dev/custody"
)

// Sign states.
const (
	SignBlank   = "blank"
	SignPosted  = "posted"
	SignExpired = "expired"
)

// VMSInput is issue_vms_update's input.
type VMSInput struct {
	ApprovalRequestID string `json:"approval_request_id"`
	BillboardID       string `json:"billboard_id"`
	Message           string `json:"message"`
	DurationS         int    `json:"duration_s,omitempty"`
}

// VMSOutput is issue_vms_update's output.
type VMSOutput struct {
	VMSUpdateID  string `json:"vms_update_id"`
	PostedAt     string `json:"posted_at"`
	MessageShown string `json:"message_shown"`
	ExpiresAt    string `json:"expires_at"`
	Reasoning    string `json:"reasoning"`
}

// Sign is one variable message sign in the registry.
type Sign struct {
	BillboardID       string `json:"billboard_id"`
	LocationID        string `json:"location_id"`
	State             string `json:"state"`
	Message           string `json:"message,omitempty"`
	PostedAt          string `json:"posted_at,omitempty"`
	ExpiresAt         string `json:"expires_at,omitempty"`
	VMSUpdateID       string `json:"vms_update_id,omitempty"`
	ApprovalRequestID string `json:"approval_request_id,omitempty"`
}

// update is what the system keeps of a posted sign update.
type update struct {
	VMSOutput
	ApprovalRequestID string `json:"approval_request_id"`
	BillboardID       string `json:"billboard_id"`
	Trace             string `json:"trace"`
	Severity          string `json:"severity"`
	LocationID        string `json:"location_id"`
}

// issueVMS is the issue_vms_update handler. The gateway has already
// checked the approval: approved, unexpired, unused and bound to exactly
// these arguments. The handler posts the message as it is: the contract
// refused anything a sign cannot show, and nothing is rewritten.
func (s *System) issueVMS(ctx context.Context, call custody.Call) (json.RawMessage, error) {
	var in VMSInput
	if err := decodeArgs(call, &in); err != nil {
		return nil, err
	}
	if in.DurationS == 0 {
		in.DurationS = 900
	}
	var req Request
	if err := s.getDoc(ctx, NSRequests, in.ApprovalRequestID, "approval request of this chain", &req); err != nil {
		return nil, err
	}
	if req.Proposed.BillboardID != in.BillboardID {
		return nil, custody.Errorf(custody.EDENIED, "approval %s is for sign %s, not %s", req.ApprovalRequestID, req.Proposed.BillboardID, in.BillboardID)
	}
	now := s.now()
	out := VMSOutput{
		VMSUpdateID: s.d.NewID(), PostedAt: custody.FormatTime(now), MessageShown: in.Message,
		ExpiresAt: custody.FormatTime(now.Add(time.Duration(in.DurationS) * time.Second)),
		Reasoning: fmt.Sprintf("Posted message on billboard_id=%s for duration_s=%d under approval_request_id=%s, approved by the operator for exactly this sign and message (brief %s, severity %s).",
			in.BillboardID, in.DurationS, in.ApprovalRequestID, req.BriefID, req.Severity),
	}
	sign := Sign{BillboardID: in.BillboardID, LocationID: req.LocationID, State: SignPosted, Message: in.Message,
		PostedAt: out.PostedAt, ExpiresAt: out.ExpiresAt, VMSUpdateID: out.VMSUpdateID, ApprovalRequestID: in.ApprovalRequestID}
	if err := s.putDoc(ctx, NSSigns, in.BillboardID, sign); err != nil {
		return nil, err
	}
	u := update{VMSOutput: out, ApprovalRequestID: in.ApprovalRequestID, BillboardID: in.BillboardID,
		Trace: call.Trace, Severity: req.Severity, LocationID: req.LocationID}
	if err := s.putDoc(ctx, NSUpdates, out.VMSUpdateID, u); err != nil {
		return nil, err
	}
	return output(out)
}

// Signs returns the registry: every corridor's sign with its state, message
// and expiry as of now. A sign nobody posted to is blank; a message past its
// expiry shows as expired.
func (s *System) Signs(ctx context.Context) ([]Sign, error) {
	posted := map[string]Sign{}
	err := s.listDocs(ctx, NSSigns, func(_ string, raw json.RawMessage) error {
		var sg Sign
		if err := json.Unmarshal(raw, &sg); err != nil {
			return err
		}
		posted[sg.BillboardID] = sg
		return nil
	})
	if err != nil {
		return nil, err
	}
	now := s.now()
	var out []Sign
	for _, c := range s.d.Corridors {
		sg, ok := posted[c.Billboard]
		if !ok {
			sg = Sign{BillboardID: c.Billboard, LocationID: c.LocationID, State: SignBlank}
		}
		if exp, err := time.Parse(time.RFC3339Nano, sg.ExpiresAt); err == nil && !now.Before(exp) {
			sg.State = SignExpired
		}
		out = append(out, sg)
	}
	return out, nil
}
