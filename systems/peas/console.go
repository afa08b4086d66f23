package peas

import (
	"context"
	"embed"
	"net/http"
	"strings"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/httpjson"
)

//go:embed console/index.html
var consoleFS embed.FS

// Snapshot is what the console page polls: corridors with their
// signatures and briefs, the sign registry and the in-car panel.
type Snapshot struct {
	Corridors     []CorridorStatus `json:"corridors"`
	Signs         []Sign           `json:"signs"`
	Notifications []Notification   `json:"notifications"`
	At            string           `json:"at"`
}

// Snapshot returns the console's view of the system now.
func (s *System) Snapshot(ctx context.Context) (Snapshot, error) {
	cs, err := s.Corridors(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	signs, err := s.Signs(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	ns, err := s.Notifications(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	return Snapshot{Corridors: cs, Signs: signs, Notifications: ns, At: custody.FormatTime(s.now())}, nil
}

// Handler serves the console page and its JSON API under whatever prefix
// it is mounted at (the page uses relative URLs):
//
//	GET  .../              the page
//	GET  .../api/state     the Snapshot
//	POST .../api/voice     {"approval_request_id","tts_voice_style","operator_id"}
//	POST .../api/watch-ask {"signature_id"}: the authenticated operator
//	                       asks for a watch signature's approval
//
// The pending approval itself is decided in the core console inbox; the
// voice choice is the one operator input of this page. Mount it behind
// operator authentication.
func (s *System) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/api/state"):
			s.serveState(w, r)
		case strings.HasSuffix(r.URL.Path, "/api/voice"):
			s.serveVoice(w, r)
		case strings.HasSuffix(r.URL.Path, "/api/watch-ask"):
			s.serveWatchAsk(w, r)
		case r.Method == http.MethodGet || r.Method == http.MethodHead:
			page, _ := consoleFS.ReadFile("console/index.html")
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			w.Write(page)
		default:
			writeError(w, custody.Errorf(custody.ENOTFOUND, "no route %s %s", r.Method, r.URL.Path))
		}
	})
}

func (s *System) serveState(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, custody.Errorf(custody.EINVALID, "use GET"))
		return
	}
	snap, err := s.Snapshot(r.Context())
	if err != nil {
		s.d.Logger.Error("console snapshot", "err", err)
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, snap)
}

// maxFormBytes caps the body of the page's operator actions.
const maxFormBytes = 4096

func (s *System) serveVoice(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeError(w, custody.Errorf(custody.EINVALID, "use POST"))
		return
	}
	var in struct {
		ID       string `json:"approval_request_id"`
		Voice    string `json:"tts_voice_style"`
		Operator string `json:"operator_id"`
	}
	if err := httpjson.Read(w, r, httpjson.Limits{MaxBytes: maxFormBytes}, &in); err != nil {
		writeError(w, err)
		return
	}
	if s.d.OperatorOf != nil {
		if id := s.d.OperatorOf(r); id != "" {
			in.Operator = id
		}
	}
	if err := s.ChooseVoice(r.Context(), in.ID, in.Voice, in.Operator); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"approval_request_id": in.ID, "tts_voice_style": in.Voice})
}

// serveWatchAsk records an operator's ask past a watch signature. The
// operator is the request's authenticated principal: a name in the body
// is refused, and without OperatorOf no ask is taken.
func (s *System) serveWatchAsk(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeError(w, custody.Errorf(custody.EINVALID, "use POST"))
		return
	}
	operator := ""
	if s.d.OperatorOf != nil {
		operator = s.d.OperatorOf(r)
	}
	if operator == "" {
		writeError(w, custody.Errorf(custody.EDENIED, "asking past a watch signature needs an authenticated operator"))
		return
	}
	var in struct {
		SignatureID string `json:"signature_id"`
	}
	if err := httpjson.Read(w, r, httpjson.Limits{MaxBytes: maxFormBytes}, &in); err != nil {
		writeError(w, err)
		return
	}
	ask, err := s.AskWatchApproval(r.Context(), in.SignatureID, operator)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ask)
}

func writeJSON(w http.ResponseWriter, status int, v any) { httpjson.Write(w, status, v) }

// writeError writes err through the server's one kind-to-status table.
func writeError(w http.ResponseWriter, err error) { httpjson.WriteError(w, err) }
