package web

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/httpjson"
	"github.com/custody-dev/custody/ledger"
)

// callRequest is the body of POST /v1/calls. Arguments keep their exact
// bytes: the gateway validates and records them as received.
type callRequest struct {
	Trace     string
	Tool      string
	Arguments json.RawMessage
}

// handleCall serves POST /v1/calls: 200 with the result, or the error
// shape with the status of its kind (202 for a pending approval).
func (s *Server) handleCall(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	req, err := s.decodeCall(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, _ := PrincipalFrom(r.Context())
	call := custody.Call{Trace: req.Trace, Tool: req.Tool, Args: req.Arguments, Actor: p.ID, Via: "http"}
	res, err := s.cfg.Gateway.Call(r.Context(), call)
	res, err = s.awaitHeld(w, r, call, res, err)
	s.metrics.ObserveCall(req.Tool, outcome(err), time.Since(start))
	if err != nil {
		s.writeCallError(w, r, err, res.Trace)
		return
	}
	if t, ok := s.cfg.Gateway.Tool(req.Tool); ok && t.MCPResult {
		res.Output = withoutCustodyMeta(res.Output)
	}
	if r.URL.Query().Get("proof") == "1" {
		writeJSON(w, http.StatusOK, s.withInclusion(r.Context(), res))
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// withoutCustodyMeta returns an MCP tool result without the _meta keys
// under custody.MetaPrefix: only custody speaks for custody, on /v1 as on
// /mcp, so an upstream cannot hand a caller a receipt, trace or proof of
// its own making. A result without such keys is returned as it came.
func withoutCustodyMeta(out json.RawMessage) json.RawMessage {
	var result map[string]json.RawMessage
	var meta map[string]json.RawMessage
	if json.Unmarshal(out, &result) != nil || json.Unmarshal(result["_meta"], &meta) != nil {
		return out
	}
	foreign := custody.ForeignMeta(meta)
	if len(foreign) == len(meta) {
		return out
	}
	if foreign == nil {
		foreign = map[string]json.RawMessage{}
	}
	m, err := json.Marshal(foreign)
	if err != nil {
		return out
	}
	result["_meta"] = m
	if len(meta) == 0 {
		delete(result, "_meta")
	}
	b, err := marshal(result)
	if err != nil {
		return out
	}
	return b
}

// decodeCall reads the call envelope. It refuses what it cannot pass on
// faithfully: a body that is not one strict JSON object (readJSON),
// unknown members, members of the wrong type. The arguments are passed on
// as their exact bytes: judging them is the gateway's work, and so is
// refusing arguments that are not strict JSON, which it records on the
// ledger (see callMembers).
func (s *Server) decodeCall(w http.ResponseWriter, r *http.Request) (callRequest, error) {
	var req callRequest
	members, err := s.callMembers(w, r)
	if err != nil {
		return req, err
	}
	for name, raw := range members {
		switch name {
		case "trace_id":
			err = decodeString(name, raw, &req.Trace)
		case "tool":
			err = decodeString(name, raw, &req.Tool)
		case "arguments":
			req.Arguments = raw
		default:
			err = custody.Errorf(custody.EINVALID, "unknown member %q in the request body", name)
		}
		if err != nil {
			return req, err
		}
	}
	if req.Tool == "" {
		return req, custody.Errorf(custody.EINVALID, `the request body must name a "tool"`)
	}
	return req, nil
}

// readObject reads a body holding exactly one strict JSON object and
// returns its members as raw values. Names match exactly: readJSON has
// refused duplicates, so each name has one value.
func (s *Server) readObject(w http.ResponseWriter, r *http.Request) (map[string]json.RawMessage, error) {
	data, err := s.readJSON(w, r)
	if err != nil {
		return nil, err
	}
	return objectMembers(data)
}

// callMembers reads the members of a call envelope. A body the strict
// checker refuses is refused, unless what it refuses is inside the
// arguments alone (httpjson.CheckEnvelope): then the arguments go to the
// gateway as they are, which refuses them with a ledger entry, as a
// refusal of an agent's call is evidence too.
func (s *Server) callMembers(w http.ResponseWriter, r *http.Request) (map[string]json.RawMessage, error) {
	data, err := s.readJSONBody(w, r)
	if err != nil {
		return nil, err
	}
	if err := httpjson.CheckEnvelope(data, ledger.Check, "arguments"); err != nil {
		return nil, httpjson.NotStrict(err)
	}
	return objectMembers(data)
}

// objectMembers returns the members of the JSON object data as raw
// values; only a body whose envelope the strict checker has passed
// reaches it, so no two members share a name.
func objectMembers(data []byte) (map[string]json.RawMessage, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil || members == nil {
		return nil, custody.Errorf(custody.EINVALID, "the request body must be a JSON object")
	}
	return members, nil
}

// decodeString decodes a member that must be a JSON string. The body has
// passed the strict check: a string without escapes is its bytes.
func decodeString(name string, raw json.RawMessage, dst *string) error {
	if len(raw) >= 2 && raw[0] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		*dst = string(raw[1 : len(raw)-1])
		return nil
	}
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, dst) != nil {
		return custody.Errorf(custody.EINVALID, "%q must be a string", name)
	}
	return nil
}

// toolsResponse is the body of GET /v1/tools.
type toolsResponse struct {
	Tools []custody.ToolSpec `json:"tools"`
}

// handleTools serves GET /v1/tools: an agent sees the tools it may call,
// an operator or auditor every tool.
func (s *Server) handleTools(w http.ResponseWriter, r *http.Request) {
	p, _ := PrincipalFrom(r.Context())
	tools := s.cfg.Gateway.Tools()
	if p.Role == RoleAgent {
		tools = s.cfg.Gateway.ToolsFor(p.ID)
	}
	if tools == nil {
		tools = []custody.ToolSpec{}
	}
	writeJSON(w, http.StatusOK, toolsResponse{Tools: tools})
}
