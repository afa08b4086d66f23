package web

import (
	"encoding/json"
	"net/http"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
)

// approvalsResponse is the body of GET /v1/approvals. ServerTime lets the
// console count down against the server's clock, not the phone's.
type approvalsResponse struct {
	Approvals  []custody.Approval `json:"approvals"`
	ServerTime string             `json:"server_time"`
}

// handleApprovals serves GET /v1/approvals[?status=], newest first.
func (s *Server) handleApprovals(w http.ResponseWriter, r *http.Request) {
	status := custody.ApprovalStatus(r.URL.Query().Get("status"))
	if !validStatus(status) {
		s.writeError(w, r, custody.Errorf(custody.EINVALID,
			"status must be one of pending, approved, declined, expired, consumed, voided"))
		return
	}
	list, err := s.cfg.Approvals.List(r.Context(), status)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if list == nil {
		list = []custody.Approval{}
	}
	writeJSON(w, http.StatusOK, approvalsResponse{Approvals: list, ServerTime: custody.FormatTime(s.cfg.Now())})
}

func validStatus(st custody.ApprovalStatus) bool {
	switch st {
	case "", custody.ApprovalPending, custody.ApprovalApproved, custody.ApprovalDeclined,
		custody.ApprovalExpired, custody.ApprovalConsumed, custody.ApprovalVoided:
		return true
	}
	return false
}

// handleApproval serves GET /v1/approvals/{id} to operators and auditors,
// and to the agent that requested the approval, so that an agent that was
// held can read what was decided: the arguments as approved, edited or
// not, are the only ones that may run. Another agent gets 404, as for an
// id that does not exist: an approval's existence is not its business.
func (s *Server) handleApproval(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	a, err := s.cfg.Approvals.Get(r.Context(), id)
	p, _ := PrincipalFrom(r.Context())
	if err == nil && p.Role == RoleAgent && a.Requester != p.ID {
		s.log.Warn("refused: another agent's approval", "principal", p.ID, "approval_request_id", id)
		err = custody.Errorf(custody.ENOTFOUND, "approval %s not found", id)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

// decisionRequest is the body of POST /v1/approvals/{id}/decision.
type decisionRequest struct {
	Decision  string
	Operator  string
	Note      string
	Arguments json.RawMessage
	// Grant, with an approval, grants a bounded class of further calls.
	Grant *approval.GrantTerms
}

// handleDecision serves POST /v1/approvals/{id}/decision for operators.
// The operator_id, when given, must be the token's own id: an operator
// decides in their own name only.
func (s *Server) handleDecision(w http.ResponseWriter, r *http.Request) {
	req, err := s.decodeDecision(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, _ := PrincipalFrom(r.Context())
	if req.Operator != "" && req.Operator != p.ID {
		s.log.Warn("refused: decision in another operator's name", "principal", p.ID, "operator_id", req.Operator)
		s.writeError(w, r, custody.Errorf(custody.EDENIED, "operator_id must be your own id %q", p.ID))
		return
	}
	a, err := s.cfg.Approvals.Decide(r.Context(), r.PathValue("id"), approval.Decision{
		Decision: req.Decision, Operator: p.ID, OperatorName: p.Name, Note: req.Note, Arguments: req.Arguments, Grant: req.Grant,
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.log.Info("approval decided", "approval_request_id", a.ID, "decision", req.Decision, "operator", p.ID)
	writeJSON(w, http.StatusOK, a)
}

// decodeDecision reads a decision body, refusing unknown, duplicate and
// mistyped members. Edited arguments keep their exact bytes.
func (s *Server) decodeDecision(w http.ResponseWriter, r *http.Request) (decisionRequest, error) {
	var req decisionRequest
	members, err := s.readObject(w, r)
	if err != nil {
		return req, err
	}
	for name, raw := range members {
		switch name {
		case "decision":
			err = decodeString(name, raw, &req.Decision)
		case "operator_id":
			err = decodeString(name, raw, &req.Operator)
		case "note":
			err = decodeString(name, raw, &req.Note)
		case "arguments":
			if string(raw) != "null" {
				req.Arguments = raw
			}
		case "grant":
			if string(raw) != "null" {
				req.Grant, err = decodeGrantTerms(raw)
			}
		default:
			err = custody.Errorf(custody.EINVALID, "unknown member %q in the request body", name)
		}
		if err != nil {
			return req, err
		}
	}
	if req.Decision != "approved" && req.Decision != "declined" {
		return req, custody.Errorf(custody.EINVALID, `"decision" must be "approved" or "declined"`)
	}
	return req, nil
}
