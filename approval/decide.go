package approval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
)

// Decision is an operator's answer to a pending request.
type Decision struct {
	// Decision is Approve or Decline.
	Decision string
	// Operator is the id of the deciding operator; required.
	Operator string
	// OperatorName is the operator's display name, when the team's
	// OpenID provider signed them in (Operator is then ISSUER#SUBJECT).
	OperatorName string
	Note         string
	// Arguments optionally replaces the request's arguments on approval.
	// Only the request's Editable top-level string members may differ; the
	// digest is rebound to the edited arguments, so only they may run.
	Arguments json.RawMessage
	// Grant, with an approval, also grants the requester further calls of
	// the tool within its terms, with a grant.created entry after the
	// decision's. Nil approves this call only.
	Grant *GrantTerms
	// Client is the MCP client whose user decided, for a decision taken
	// there (Operator is then ClientDecider of the agent): it decides
	// this call only, as it stands. Nil for an operator's decision.
	Client *DecidingClient
}

// DecidingClient is the MCP client in which its user decided a held call,
// as the client introduced itself (its initialize request's clientInfo).
type DecidingClient struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// ClientDeciderPrefix begins the decider of a decision taken by the user
// of an MCP client, and no other.
const ClientDeciderPrefix = "client:"

// ClientDecider is who decides when the user of the MCP client of agent
// does: "client:" and the agent's id.
func ClientDecider(agent string) string { return ClientDeciderPrefix + agent }

// decisionBody is the approval.decided ledger body.
type decisionBody struct {
	ID       string `json:"approval_request_id"`
	Decision string `json:"decision"`
	Operator string `json:"operator_id"`
	// OperatorName is set for an operator the OpenID provider signed in.
	OperatorName string          `json:"operator_name,omitempty"`
	Note         string          `json:"note"`
	Tool         string          `json:"tool"`
	Arguments    json.RawMessage `json:"arguments"`
	Digest       string          `json:"action_digest"`
	Edited       bool            `json:"edited"`
	// RequestedDigest is the digest the request was made for; it differs
	// from Digest when the operator edited the arguments.
	RequestedDigest string `json:"requested_digest"`
	// Grant is the id of the grant the decision made, if any.
	Grant string `json:"grant_id,omitempty"`
	// Client is the MCP client the decision was taken in, if any.
	Client *DecidingClient `json:"client,omitempty"`
}

// Decide records an operator's decision on the pending request id and
// returns the decided approval. An approval is checked by the service's
// validator (Config.Validate) with the arguments as approved, so that an
// approved action is one that will run as approved. Errors: EINVALID for
// a malformed decision, an edit outside the editable fields or arguments
// the tool's contract or policy refuses (with the violations), ENOTFOUND, EEXPIRED past the
// request's expiry, ECONFLICT when it was already decided, EUNAVAILABLE
// when the store or the ledger fails.
func (s *Service) Decide(ctx context.Context, id string, d Decision) (custody.Approval, error) {
	if err := checkDecision(d); err != nil {
		return custody.Approval{}, err
	}
	now := s.now().UTC().Truncate(time.Microsecond)
	before, err := s.store.Approval(ctx, id)
	if err != nil {
		return custody.Approval{}, storeError("decide approval", err)
	}
	a := before
	if err := applyDecision(&a, d, now); err != nil {
		return custody.Approval{}, err
	}
	if err := s.checkApproved(ctx, a, a.Digest != before.Digest); err != nil {
		return custody.Approval{}, err
	}
	grant, err := s.decidedGrant(ctx, &a, d, now)
	if err != nil {
		return custody.Approval{}, err
	}
	body, err := json.Marshal(decisionBody{
		ID: a.ID, Decision: d.Decision, Operator: d.Operator, OperatorName: d.OperatorName, Note: d.Note, Tool: a.Tool,
		Arguments: a.Arguments, Digest: a.Digest, Edited: a.Digest != before.Digest, RequestedDigest: before.Digest,
		Grant: a.Grant, Client: d.Client,
	})
	if err != nil {
		return custody.Approval{}, fmt.Errorf("encode decision: %w", err)
	}
	// The decision and its approval.decided entry are one commit, on
	// condition that the request is still pending: a decision that is
	// not on the ledger never authorises anything.
	_, err = s.record(ctx, custody.KindApprovalDecided, d.Operator, a, body, custody.UpdateApproval(a, custody.ApprovalPending))
	if custody.ErrorKind(err) == custody.ECONFLICT {
		// Decided or expired in the meantime: say which.
		if cur, gerr := s.store.Approval(ctx, id); gerr == nil {
			if derr := applyDecision(&cur, d, now); derr != nil {
				return custody.Approval{}, derr
			}
		}
	}
	if err != nil {
		return custody.Approval{}, err
	}
	if grant != nil {
		if err := s.createGrant(ctx, *grant); err != nil {
			return a, &custody.Error{Kind: custody.ErrorKind(err), ApprovalRequestID: a.ID, Err: err,
				Message: fmt.Sprintf("approval %s was approved for this call, but its grant could not be recorded: %s", a.ID, custody.ErrorMessage(err))}
		}
	}
	return a, nil
}

// decidedGrant builds and checks the grant d makes, if any, and names it
// on a; nil when d grants nothing.
func (s *Service) decidedGrant(ctx context.Context, a *custody.Approval, d Decision, now time.Time) (*custody.Grant, error) {
	if d.Grant == nil {
		return nil, nil
	}
	g, err := s.newGrant(*a, *d.Grant, d.Operator, d.Note, now)
	if err != nil {
		return nil, err
	}
	if err := s.checkNewGrant(ctx, g); err != nil {
		return nil, err
	}
	a.Grant = g.ID
	return &g, nil
}

// checkApproved runs the validator on an action about to be approved;
// edited says the operator changed its arguments. A refusal is EINVALID
// with the violations, whatever kind the validator gave, since it is the
// decision that is refused and not a call.
func (s *Service) checkApproved(ctx context.Context, a custody.Approval, edited bool) error {
	if s.validate == nil || a.Status != custody.ApprovalApproved {
		return nil
	}
	err := s.validate(ctx, a)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNoContract) && !edited:
		return nil
	case errors.Is(err, ErrNoContract):
		return &custody.Error{Kind: custody.EINVALID, ApprovalRequestID: a.ID, Err: err,
			Message: fmt.Sprintf("the arguments of tool %q cannot be edited here: there is no contract to check them against", a.Tool)}
	}
	ce := custody.AsError(err)
	if ce.Kind == custody.EUNAVAILABLE || ce.Kind == custody.EINTERNAL {
		return ce
	}
	what := "the arguments"
	if edited {
		what = "the edited arguments"
	}
	return &custody.Error{Kind: custody.EINVALID, ApprovalRequestID: a.ID, Violations: ce.Violations, Err: err,
		Message: fmt.Sprintf("%s would not run: %s", what, ce.Message)}
}

// checkDecision refuses a decision without an operator or a known verdict.
func checkDecision(d Decision) error {
	if d.Operator == "" {
		return custody.Errorf(custody.EINVALID, "a decision needs the operator's id")
	}
	if d.Decision != Approve && d.Decision != Decline {
		return custody.Errorf(custody.EINVALID, "decision must be %q or %q, not %q", Approve, Decline, d.Decision)
	}
	if d.Decision == Decline && d.Arguments != nil {
		return custody.Errorf(custody.EINVALID, "a declined request cannot have edited arguments")
	}
	if d.Decision == Decline && d.Grant != nil {
		return custody.Errorf(custody.EINVALID, "a declined request cannot make a grant")
	}
	return checkClientDecision(d)
}

// checkClientDecision keeps the decisions of an MCP client's user apart
// from operators': only they have a "client:" decider, always with the
// client named, and they decide the call as it stands, nothing more.
func checkClientDecision(d Decision) error {
	fromClient := strings.HasPrefix(d.Operator, ClientDeciderPrefix)
	switch {
	case fromClient && d.Client == nil:
		return custody.Errorf(custody.EINVALID, "decider %q is an MCP client's: the decision must name the client", d.Operator)
	case !fromClient && d.Client != nil:
		return custody.Errorf(custody.EINVALID, "a decision taken in an MCP client is %s and the agent's id, not %q", ClientDeciderPrefix, d.Operator)
	case fromClient && d.Operator == ClientDeciderPrefix:
		return custody.Errorf(custody.EINVALID, "decider %q names no agent", d.Operator)
	case fromClient && (d.Arguments != nil || d.Grant != nil):
		return custody.Errorf(custody.EINVALID, "a decision taken in an MCP client decides the call as it stands: no edit, no grant")
	}
	return nil
}

// applyDecision changes the pending approval a as d says, at time now.
func applyDecision(a *custody.Approval, d Decision, now time.Time) error {
	if a.Status != custody.ApprovalPending {
		return &custody.Error{Kind: custody.ECONFLICT, ApprovalRequestID: a.ID,
			Message: fmt.Sprintf("approval %s is already %s", a.ID, a.Status)}
	}
	if !now.Before(a.ExpiresAt) {
		return &custody.Error{Kind: custody.EEXPIRED, ApprovalRequestID: a.ID, ExpiresAt: a.ExpiresAt,
			Message: fmt.Sprintf("approval %s expired at %s", a.ID, custody.FormatTime(a.ExpiresAt))}
	}
	if d.Arguments != nil && !bytes.Equal(d.Arguments, a.Arguments) {
		if err := CheckEdit(a.Arguments, d.Arguments, a.Editable); err != nil {
			return err
		}
		digest, err := ledger.ActionDigest(a.Tool, d.Arguments)
		if err != nil {
			return &custody.Error{Kind: custody.EINVALID, Message: "edited arguments are not canonical JSON", Err: err}
		}
		a.Arguments, a.Digest = d.Arguments, digest
	}
	a.Status = custody.ApprovalStatus(d.Decision)
	a.DecidedAt = &now
	a.Operator = d.Operator
	a.Note = d.Note
	return nil
}

// CheckEdit returns nil when edited differs from orig only in the values of
// top-level string members named in editable, and an EINVALID error naming
// the first member that may not change otherwise. Both must be JSON objects.
func CheckEdit(orig, edited json.RawMessage, editable []string) error {
	if err := ledger.Check(edited); err != nil {
		return &custody.Error{Kind: custody.EINVALID, Message: fmt.Sprintf("edited arguments: %v", err)}
	}
	var o, e map[string]json.RawMessage
	if err := json.Unmarshal(orig, &o); err != nil {
		return &custody.Error{Kind: custody.EINVALID, Message: "the requested arguments are not a JSON object", Err: err}
	}
	if err := json.Unmarshal(edited, &e); err != nil || e == nil {
		return custody.Errorf(custody.EINVALID, "edited arguments must be a JSON object")
	}
	keys := make([]string, 0, len(o)+len(e))
	for k := range o {
		keys = append(keys, k)
	}
	for k := range e {
		if _, ok := o[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		ov, inO := o[k]
		ev, inE := e[k]
		if inO && inE && jsonEqual(ov, ev) {
			continue
		}
		if !slices.Contains(editable, k) {
			return &custody.Error{Kind: custody.EINVALID, Message: fmt.Sprintf("argument %q may not be edited", k),
				Violations: []custody.Violation{{Instance: "/" + k, Keyword: "editable", Message: "not an editable argument"}}}
		}
		if !isString(ov) || !isString(ev) {
			return &custody.Error{Kind: custody.EINVALID, Message: fmt.Sprintf("argument %q: only a string value may be edited", k),
				Violations: []custody.Violation{{Instance: "/" + k, Keyword: "editable", Message: "only string values may be edited"}}}
		}
	}
	return nil
}

// jsonEqual reports whether two JSON values are the same value.
func jsonEqual(a, b json.RawMessage) bool {
	ca, errA := ledger.Canonicalize(a)
	cb, errB := ledger.Canonicalize(b)
	return errA == nil && errB == nil && bytes.Equal(ca, cb)
}

// isString reports whether raw is a JSON string.
func isString(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '"'
}
