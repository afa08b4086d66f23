package approval

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/custody-dev/custody"
)

// Voiding says what replaced the definition of a tool under which
// approvals were asked: a re-pin, by whom, recorded how.
type Voiding struct {
	// Actor voids the approvals: the operator whose re-pin replaced the
	// definition.
	Actor string
	// Reason is said on every approval.voided entry.
	Reason string
	// Refs are added to every approval.voided entry (the re-pin's
	// approval and definitions), so that the entries thread to it.
	Refs map[string]string
	// Detail is added to every approval.voided body.
	Detail map[string]any
}

// voidBody is the approval.voided ledger body.
type voidBody struct {
	ID           string          `json:"approval_request_id"`
	Tool         string          `json:"tool"`
	Arguments    json.RawMessage `json:"arguments"`
	Digest       string          `json:"action_digest"`
	Definition   string          `json:"tool_definition_sha256"`
	StatusBefore string          `json:"status_before"`
	Requester    string          `json:"requester"`
	Reason       string          `json:"reason"`
	Detail       map[string]any  `json:"detail,omitempty"`
}

// VoidDefinition voids every approval of tool asked under definition that
// could still authorise a call (pending, or approved and unused), each
// with an approval.voided entry naming it and v, in one commit with its
// new status, and returns those it voided. An approval used, decided or
// expired meanwhile is left as it became; one approved meanwhile is
// voided all the same. It stops at the first failure of the store or the
// ledger (EUNAVAILABLE); those voided before it stay voided.
func (s *Service) VoidDefinition(ctx context.Context, tool, definition string, v Voiding) ([]custody.Approval, error) {
	var out []custody.Approval
	for _, st := range []custody.ApprovalStatus{custody.ApprovalPending, custody.ApprovalApproved} {
		as, err := s.List(ctx, st)
		if err != nil {
			return out, err
		}
		for _, a := range as {
			if a.Tool != tool || a.Definition != definition {
				continue
			}
			voided, ok, err := s.void(ctx, a, v)
			if err != nil {
				return out, err
			}
			if ok {
				out = append(out, voided)
			}
		}
	}
	return out, nil
}

// void voids a, unless a change of it since it was read left it unable
// to authorise anything; ok says it was voided.
func (s *Service) void(ctx context.Context, a custody.Approval, v Voiding) (custody.Approval, bool, error) {
	for range 3 {
		if !voidable(a) {
			return a, false, nil
		}
		after := a
		after.Status = custody.ApprovalVoided
		body, err := json.Marshal(voidBody{ID: a.ID, Tool: a.Tool, Arguments: a.Arguments, Digest: a.Digest,
			Definition: a.Definition, StatusBefore: string(a.Status), Requester: a.Requester, Reason: v.Reason, Detail: v.Detail})
		if err != nil {
			return a, false, fmt.Errorf("encode approval.voided: %w", err)
		}
		refs := map[string]string{RefApproval: a.ID, RefDigest: a.Digest}
		maps.Copy(refs, v.Refs)
		refs[RefApproval] = a.ID
		e := custody.Entry{At: custody.FormatTime(s.now()), Kind: custody.KindApprovalVoided, Trace: a.Trace,
			Actor: v.Actor, Refs: refs, Body: body}
		_, err = s.ledger.Commit(ctx, e, custody.UpdateApproval(after, a.Status))
		switch {
		case err == nil:
			return after, true, nil
		case custody.ErrorKind(err) != custody.ECONFLICT:
			return a, false, &custody.Error{Kind: custody.EUNAVAILABLE, Message: "evidence ledger unavailable",
				ApprovalRequestID: a.ID, Err: fmt.Errorf("append %s: %w", custody.KindApprovalVoided, err)}
		}
		// Changed since it was read: look again.
		if a, err = s.Get(ctx, a.ID); err != nil {
			return a, false, err
		}
	}
	return a, false, &custody.Error{Kind: custody.EUNAVAILABLE, ApprovalRequestID: a.ID,
		Message: fmt.Sprintf("approval %s kept changing while it was being voided", a.ID)}
}

// voidable reports whether a could still authorise a call: pending, or
// approved and unused.
func voidable(a custody.Approval) bool {
	return a.ConsumedSeq == 0 && (a.Status == custody.ApprovalPending || a.Status == custody.ApprovalApproved)
}
