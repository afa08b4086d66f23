package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/custody-dev/custody"
)

// maxBody caps every request body the API reads.
const maxBody = 4 << 20

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
	req, err := decodeCall(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, _ := PrincipalFrom(r.Context())
	res, err := s.cfg.Gateway.Call(r.Context(), custody.Call{
		Trace: req.Trace, Tool: req.Tool, Args: req.Arguments, Actor: p.ID, Via: "http",
	})
	s.metrics.ObserveCall(req.Tool, outcome(err), time.Since(start))
	if err != nil {
		s.writeCallError(w, r, err, res.Trace)
		return
	}
	if r.URL.Query().Get("proof") == "1" {
		writeJSON(w, http.StatusOK, s.withInclusion(r.Context(), res))
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// decodeCall reads the call envelope. It refuses what it cannot pass on
// faithfully: a body that is not one JSON object, duplicate or unknown
// members, members of the wrong type. The arguments themselves are not
// judged here: that is the gateway's work, and it records the refusal.
func decodeCall(w http.ResponseWriter, r *http.Request) (callRequest, error) {
	var req callRequest
	members, err := readObject(http.MaxBytesReader(w, r.Body, maxBody))
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

// readObject reads a body holding exactly one JSON object and returns its
// members as raw values, refusing duplicate names.
func readObject(body io.Reader) (map[string]json.RawMessage, error) {
	data, err := io.ReadAll(body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, custody.Errorf(custody.EINVALID, "the request body is larger than %d bytes", tooBig.Limit)
		}
		return nil, &custody.Error{Kind: custody.EINVALID, Message: "the request body could not be read", Err: err}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, custody.Errorf(custody.EINVALID, "the request body must be a JSON object")
	}
	members := map[string]json.RawMessage{}
	for dec.More() {
		name, raw, err := nextMember(dec)
		if err != nil {
			return nil, err
		}
		if _, dup := members[name]; dup {
			return nil, custody.Errorf(custody.EINVALID, "duplicate member %q in the request body", name)
		}
		members[name] = raw
	}
	if err := endObject(dec); err != nil {
		return nil, err
	}
	return members, nil
}

// nextMember reads one name and its raw value.
func nextMember(dec *json.Decoder) (string, json.RawMessage, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", nil, custody.Errorf(custody.EINVALID, "the request body is not valid JSON")
	}
	name, _ := tok.(string)
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return "", nil, custody.Errorf(custody.EINVALID, "the value of %q is not valid JSON", name)
	}
	return name, raw, nil
}

// endObject consumes the closing brace and refuses trailing data.
func endObject(dec *json.Decoder) error {
	if _, err := dec.Token(); err != nil {
		return custody.Errorf(custody.EINVALID, "the request body is not valid JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return custody.Errorf(custody.EINVALID, "unexpected data after the request body's JSON object")
	}
	return nil
}

// decodeString decodes a member that must be a JSON string.
func decodeString(name string, raw json.RawMessage, dst *string) error {
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
