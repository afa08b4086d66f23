package web

import (
	_ "embed"
	"encoding/json"
	"net/http"

	"github.com/custody-dev/custody"
)

// openAPI is the OpenAPI 3.1 document of /v1, served at /v1/openapi.json.
// TestOpenAPIMatchesRoutes holds it to the routes the server has.
//
//go:embed openapi.json
var openAPI []byte

// handleOpenAPI serves GET /v1/openapi.json. It needs no token: it
// describes the API, not anything in it.
func (s *Server) handleOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(openAPI)
}

// toolDetail is the body of GET /v1/tools/{name}.
type toolDetail struct {
	Tool   custody.ToolSpec `json:"tool"`
	Input  json.RawMessage  `json:"input_schema"`
	Output json.RawMessage  `json:"output_schema"`
}

// handleTool serves GET /v1/tools/{name}: the tool and the schemas the
// gateway validates its input and output against. A tool the caller may
// not see is not found, as if it did not exist.
func (s *Server) handleTool(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	p, _ := PrincipalFrom(r.Context())
	t, ok := s.cfg.Gateway.Tool(name)
	if !ok || (p.Role == RoleAgent && !s.cfg.Gateway.Allows(p.ID, name)) {
		s.writeError(w, r, custody.Errorf(custody.ENOTFOUND, "no tool %q", name))
		return
	}
	if s.cfg.Schemas == nil {
		s.writeError(w, r, custody.Errorf(custody.EUNAVAILABLE, "tool schemas are not served by this instance"))
		return
	}
	in, err := s.cfg.Schemas.Bundle(t.Spec.Input)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.cfg.Schemas.Bundle(t.Spec.Output)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toolDetail{Tool: t.Spec, Input: in, Output: out})
}
