package mesh

import (
	"context"
	_ "embed"
	"errors"
	"net/http"
	"strings"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/httpjson"
)

//go:embed assets/map.html
var mapPage []byte

// maxFormBytes bounds a posted form.
const maxFormBytes = 16 << 10

// Handler serves the live mesh map and its JSON API. It expects to be
// mounted at /apps/mesh/ (the prefix is stripped when present):
//
//	GET  /              the map page
//	GET  /api/state     nodes, cases, audiences and tiers as JSON
//	POST /api/broadcast a Form: approve and publish a broadcast
//	POST /api/decline   {"approval_request_id","operator_id","note"}
func (s *System) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.servePage)
	mux.HandleFunc("GET /api/state", s.serveState)
	mux.HandleFunc("POST /api/broadcast", s.serveBroadcast)
	mux.HandleFunc("POST /api/decline", s.serveDecline)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, ok := strings.CutPrefix(r.URL.Path, "/apps/mesh"); ok {
			r2 := r.Clone(r.Context())
			r2.URL.Path = p
			if p == "" {
				r2.URL.Path = "/"
			}
			r = r2
		}
		mux.ServeHTTP(w, r)
	})
}

func (s *System) servePage(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'")
	_, _ = w.Write(mapPage)
}

// state is the JSON the map polls.
type state struct {
	Source    string       `json:"source"`
	Nodes     []NodeStatus `json:"nodes"`
	Cases     []Case       `json:"cases"`
	Audiences []string     `json:"audiences"`
	Tiers     []Tier       `json:"tiers"`
	// Operator is the signed-in operator who decides, when the server
	// knows one; the form then asks for no id.
	Operator string `json:"operator,omitempty"`
}

func (s *System) serveState(w http.ResponseWriter, r *http.Request) {
	view, desk, source := s.current()
	st := state{Source: source, Audiences: Audiences(), Tiers: tiers(), Nodes: []NodeStatus{}, Cases: []Case{}, Operator: s.operator(r, "")}
	if view != nil {
		st.Nodes = view.Nodes()
	}
	if desk != nil {
		st.Cases = desk.Cases()
		if len(st.Cases) > 50 {
			st.Cases = st.Cases[:50]
		}
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *System) serveBroadcast(w http.ResponseWriter, r *http.Request) {
	var f Form
	if err := readJSON(w, r, &f); err != nil {
		writeError(w, err)
		return
	}
	f.OperatorID = s.operator(r, f.OperatorID)
	_, desk, _ := s.current()
	if desk == nil {
		writeError(w, custody.Errorf(custody.EUNAVAILABLE, "the mesh is not running"))
		return
	}
	b, err := desk.Approve(r.Context(), f)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, b)
}

func (s *System) serveDecline(w http.ResponseWriter, r *http.Request) {
	var d struct {
		ID       string `json:"approval_request_id"`
		Operator string `json:"operator_id"`
		Note     string `json:"note"`
	}
	if err := readJSON(w, r, &d); err != nil {
		writeError(w, err)
		return
	}
	_, desk, _ := s.current()
	if desk == nil {
		writeError(w, custody.Errorf(custody.EUNAVAILABLE, "the mesh is not running"))
		return
	}
	if err := desk.Decline(r.Context(), d.ID, s.operator(r, d.Operator), d.Note); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"approval_request_id": d.ID, "status": CaseDeclined})
}

// readJSON decodes a small JSON body as strictly as every door reads one
// (httpjson.Read).
func readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	return httpjson.Read(w, r, httpjson.Limits{MaxBytes: maxFormBytes}, v)
}

func writeJSON(w http.ResponseWriter, status int, v any) { httpjson.Write(w, status, v) }

// writeError writes err through the server's one kind-to-status table; a
// request the client abandoned is unavailable, not an internal error.
func writeError(w http.ResponseWriter, err error) {
	if errors.Is(err, context.Canceled) {
		err = custody.Errorf(custody.EUNAVAILABLE, "request cancelled")
	}
	httpjson.WriteError(w, err)
}

// operator returns the authenticated operator's id when the server knows
// it, else the id the form gave.
func (s *System) operator(r *http.Request, given string) string {
	if s.deps.OperatorOf != nil {
		if id := s.deps.OperatorOf(r); id != "" {
			return id
		}
	}
	return given
}
