package web

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
)

// grantForm is what the console's "Grant…" offers for one held call: the
// schema a grant is prefilled with, exactly as it would be granted, and
// whether the tool takes grants at all (and why not).
type grantForm struct {
	Allowed   bool            `json:"allowed"`
	Reason    string          `json:"reason,omitempty"`
	Arguments json.RawMessage `json:"arguments"`
}

// grantForm returns the grant the console offers for the approval a.
func (s *Server) grantForm(ctx context.Context, a custody.Approval) grantForm {
	prefill, err := approval.SuggestGrant(a.Arguments)
	if err != nil {
		return grantForm{Reason: "no grant can be prefilled for these arguments", Arguments: json.RawMessage(`{}`)}
	}
	form := grantForm{Allowed: true, Arguments: prefill}
	g := custody.Grant{ID: "prefill-" + a.ID, Agent: a.Requester, Tool: a.Tool, Arguments: prefill, Definition: a.Definition}
	if err := s.cfg.Gateway.CheckGrant(ctx, g); err != nil {
		form.Allowed, form.Reason = false, custody.ErrorMessage(err)
	}
	return form
}

// decodeGrantTerms reads the "grant" member of a decision:
// {"arguments": SCHEMA, "max_uses": N, "expires": RFC3339}, refusing
// unknown and mistyped members.
func decodeGrantTerms(raw json.RawMessage) (*approval.GrantTerms, error) {
	members, err := objectMembers(raw)
	if err != nil {
		return nil, custody.Errorf(custody.EINVALID, `"grant" must be an object {"arguments", "max_uses", "expires"}`)
	}
	t := &approval.GrantTerms{}
	for name, v := range members {
		switch name {
		case "arguments":
			if len(v) == 0 || v[0] != '{' {
				return nil, custody.Errorf(custody.EINVALID, `"grant.arguments" must be a JSON Schema object`)
			}
			t.Arguments = v
		case "max_uses":
			if t.MaxUses, err = strconv.ParseInt(string(v), 10, 64); err != nil {
				return nil, custody.Errorf(custody.EINVALID, `"grant.max_uses" must be a whole number`)
			}
		case "expires":
			var at string
			if err := decodeString("grant.expires", v, &at); err != nil {
				return nil, err
			}
			if t.Expires, err = time.Parse(time.RFC3339, at); err != nil {
				return nil, custody.Errorf(custody.EINVALID, `"grant.expires" must be an RFC 3339 time, e.g. 2026-03-01T18:00:00Z`)
			}
		default:
			return nil, custody.Errorf(custody.EINVALID, "unknown member %q in the grant", name)
		}
	}
	if t.Arguments == nil {
		return nil, custody.Errorf(custody.EINVALID, `"grant.arguments" is required: the JSON Schema of the arguments the grant allows`)
	}
	return t, nil
}

// grantsResponse is the body of GET /v1/grants.
type grantsResponse struct {
	Grants     []custody.Grant `json:"grants"`
	ServerTime string          `json:"server_time"`
}

// handleGrants serves GET /v1/grants, newest first: each grant with its
// uses and status, void when its tool was re-pinned since.
func (s *Server) handleGrants(w http.ResponseWriter, r *http.Request) {
	list, err := s.cfg.Approvals.Grants(r.Context(), s.cfg.Gateway.Definition)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if list == nil {
		list = []custody.Grant{}
	}
	writeJSON(w, http.StatusOK, grantsResponse{Grants: list, ServerTime: custody.FormatTime(s.cfg.Now())})
}

// handleRevoke serves POST /v1/grants/{id}/revoke for operators:
// {"reason": TEXT}, in the name of the token's operator.
func (s *Server) handleRevoke(w http.ResponseWriter, r *http.Request) {
	members, err := s.readObject(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, _ := PrincipalFrom(r.Context())
	var reason, operator string
	for name, raw := range members {
		switch name {
		case "reason":
			err = decodeString(name, raw, &reason)
		case "operator_id":
			err = decodeString(name, raw, &operator)
		default:
			err = custody.Errorf(custody.EINVALID, "unknown member %q in the request body", name)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	if operator != "" && operator != p.ID {
		s.writeError(w, r, custody.Errorf(custody.EDENIED, "operator_id must be your own id %q", p.ID))
		return
	}
	g, err := s.cfg.Approvals.Revoke(r.Context(), r.PathValue("id"), p.ID, reason)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.log.Info("grant revoked", "grant", g.ID, "operator", p.ID)
	writeJSON(w, http.StatusOK, g)
}
