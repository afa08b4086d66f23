package web

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"reflect"
	"slices"
	"strings"
)

//go:embed console
var consoleFiles embed.FS

// mountConsole serves the embedded console at /, its sign-in page and
// its login, logout and login-link endpoints. The static files hold no data, so they need no token; every
// API call the console makes does.
func (s *Server) mountConsole(mux *http.ServeMux) error {
	root, err := fs.Sub(consoleFiles, "console")
	if err != nil {
		return fmt.Errorf("console files: %w", err)
	}
	static := http.FileServerFS(root)
	mux.Handle("/", noCache(static))
	mux.HandleFunc("GET /login", s.handleLoginPage)
	mux.HandleFunc("POST /login", s.handleLogin)
	mux.HandleFunc("POST /logout", s.handleLogout)
	s.mountIdP(mux)
	return nil
}

// noCache serves the static files for GET and HEAD only and makes browsers revalidate the console on every load, so an
// upgraded server never runs with a stale script. The service worker keeps
// its own copy for offline use.
func noCache(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if strings.HasSuffix(r.URL.Path, ".webmanifest") {
			w.Header().Set("Content-Type", "application/manifest+json")
		}
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}

// consoleResponse is the body of GET /v1/console: who is signed in and
// which apps to link.
type consoleResponse struct {
	Principal Principal `json:"principal"`
	Apps      []appLink `json:"apps"`
}

type appLink struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	Path  string `json:"path"`
}

func (s *Server) handleConsole(w http.ResponseWriter, r *http.Request) {
	p, _ := PrincipalFrom(r.Context())
	resp := consoleResponse{Principal: p, Apps: []appLink{}}
	for _, a := range s.cfg.Apps {
		resp.Apps = append(resp.Apps, appLink{Name: a.Name, Title: a.Title, Path: "/apps/" + a.Name + "/"})
	}
	writeJSON(w, http.StatusOK, resp)
}

// validAppName reports whether name is one lower-case URL path segment.
func validAppName(name string) bool {
	if name == "" || name[0] == '-' || name[0] == '_' {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// mountApps mounts every app at /apps/{Name}/ for operators and auditors.
func (s *Server) mountApps(mux *http.ServeMux) error {
	seen := map[string]bool{}
	for _, a := range s.cfg.Apps {
		if !validAppName(a.Name) || a.Handler == nil || seen[a.Name] {
			return fmt.Errorf("web: app %q: want a unique lower-case name and a handler", a.Name)
		}
		seen[a.Name] = true
		prefix := "/apps/" + a.Name
		h := http.StripPrefix(prefix, a.Handler)
		read, write := s.require(h.ServeHTTP, readers()...), s.require(h.ServeHTTP, RoleOperator)
		mux.HandleFunc(prefix+"/", func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				read(w, r)
				return
			}
			write(w, r) // a change of state is an operator's act
		})
	}
	return nil
}

// Schemas gives the standalone JSON Schema of a contract reference, as
// *contract.Registry's Bundle does.
type Schemas interface {
	Bundle(ref string) (json.RawMessage, error)
}

// formField is one argument an operator may edit before approving: its
// current value and, when its schema fixes the values it may take, those
// values, so that the console offers a choice instead of free text.
type formField struct {
	Name  string          `json:"name"`
	Value json.RawMessage `json:"value"`
	Enum  []any           `json:"enum,omitempty"`
}

// formResponse is the body of GET /v1/approvals/{id}/form.
type formResponse struct {
	ApprovalRequestID string      `json:"approval_request_id"`
	Fields            []formField `json:"fields"`
	// Grant is what the console's "Grant…" offers.
	Grant grantForm `json:"grant"`
}

// handleForm serves GET /v1/approvals/{id}/form: the approval's editable
// arguments, each with the values its tool's input contract (narrowed by
// the tool's arguments policy) allows when those are a fixed set.
func (s *Server) handleForm(w http.ResponseWriter, r *http.Request) {
	a, err := s.cfg.Approvals.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal(a.Arguments, &args); err != nil {
		args = nil // not an object: nothing to edit field by field
	}
	schemas := s.inputSchemas(a.Tool)
	resp := formResponse{ApprovalRequestID: a.ID, Fields: []formField{}, Grant: s.grantForm(r.Context(), a)}
	for _, name := range a.Editable {
		v, ok := args[name]
		if !ok {
			continue
		}
		resp.Fields = append(resp.Fields, formField{Name: name, Value: v, Enum: allowedValues(schemas, name)})
	}
	writeJSON(w, http.StatusOK, resp)
}

// inputSchemas returns the decoded schemas an edited argument of tool
// must match: its input contract (as published) and its arguments
// policy. A schema that cannot be had is left out: the form then offers
// free text, and the decision is still checked in full by the server.
func (s *Server) inputSchemas(tool string) []any {
	t, ok := s.cfg.Gateway.Tool(tool)
	if !ok {
		return nil
	}
	var raws []json.RawMessage
	if t.Published != nil && t.Published.Input != nil {
		raws = append(raws, t.Published.Input)
	} else if s.cfg.Schemas != nil {
		if b, err := s.cfg.Schemas.Bundle(t.Spec.Input); err == nil {
			raws = append(raws, b)
		}
	}
	if ref := t.Spec.ArgumentsPolicy; ref != "" && s.cfg.Schemas != nil {
		if b, err := s.cfg.Schemas.Bundle(ref); err == nil {
			raws = append(raws, b)
		}
	}
	var out []any
	for _, raw := range raws {
		var doc any
		if json.Unmarshal(raw, &doc) == nil {
			out = append(out, doc)
		}
	}
	return out
}

// allowedValues returns the values property name may take under every one
// of schemas, in the first schema's order, or nil when none fixes them.
func allowedValues(schemas []any, name string) []any {
	var out []any
	fixed := false
	for _, doc := range schemas {
		enum, ok := propertyEnum(doc, name)
		if !ok {
			continue
		}
		if !fixed {
			out, fixed = enum, true
			continue
		}
		out = slices.DeleteFunc(out, func(v any) bool {
			return !slices.ContainsFunc(enum, func(w any) bool { return reflect.DeepEqual(v, w) })
		})
	}
	return out
}

// propertyEnum returns the enum of the top-level property name of the
// bundled schema doc, following local references.
func propertyEnum(doc any, name string) ([]any, bool) {
	root := deref(doc, doc)
	props, _ := jsonMember(root, "properties").(map[string]any)
	prop := deref(doc, props[name])
	enum, ok := jsonMember(prop, "enum").([]any)
	return enum, ok
}

// deref follows the local "$ref" of schema within doc, a few steps deep.
func deref(doc, schema any) any {
	for range 8 {
		ref, ok := jsonMember(schema, "$ref").(string)
		if !ok || !strings.HasPrefix(ref, "#") {
			return schema
		}
		schema = jsonPointer(doc, ref[1:])
	}
	return schema
}

// jsonPointer resolves the JSON pointer ptr in doc; nil when it names nothing.
func jsonPointer(doc any, ptr string) any {
	if ptr == "" {
		return doc
	}
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		doc = jsonMember(doc, tok)
	}
	return doc
}

// jsonMember returns the member name of v when v is an object.
func jsonMember(v any, name string) any {
	m, _ := v.(map[string]any)
	return m[name]
}
