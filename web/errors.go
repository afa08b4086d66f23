package web

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/custody-dev/custody"
)

// statusOf maps every error kind to its HTTP status: the one table. A
// pending approval is not a failure of the request: the action was
// accepted for a human decision, hence 202. Unknown kinds are internal.
func statusOf(kind string) int {
	switch kind {
	case custody.EINVALID:
		return http.StatusBadRequest
	case custody.EDENIED:
		return http.StatusForbidden
	case custody.EPENDING:
		return http.StatusAccepted
	case custody.EEXPIRED, custody.ECONFLICT:
		return http.StatusConflict
	case custody.ENOTFOUND:
		return http.StatusNotFound
	case custody.EUNAVAILABLE:
		return http.StatusServiceUnavailable
	case custody.EUNAUTHORIZED:
		return http.StatusUnauthorized
	default:
		return http.StatusInternalServerError
	}
}

// errorBody is the one error shape of the API:
// {"error":{"kind","message","violations"?,"approval_request_id"?,"expires_at"?,"trace_id"?,"receipt"?}}.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Kind              string              `json:"kind"`
	Message           string              `json:"message"`
	Violations        []custody.Violation `json:"violations,omitempty"`
	ApprovalRequestID string              `json:"approval_request_id,omitempty"`
	ExpiresAt         string              `json:"expires_at,omitempty"`
	// TraceID is the trace of a refused call: retry a call held for
	// approval under the same trace.
	TraceID string           `json:"trace_id,omitempty"`
	Receipt *custody.Receipt `json:"receipt,omitempty"`
}

// detailOf returns the part of err that is safe to show a caller: the
// Message of a *custody.Error (safe by its contract), or "internal error"
// for any other error, whose text stays in the log.
func detailOf(err error) errorDetail {
	e := custody.AsError(err)
	d := errorDetail{
		Kind:              e.Kind,
		Message:           e.Message,
		Violations:        e.Violations,
		ApprovalRequestID: e.ApprovalRequestID,
		Receipt:           e.Receipt,
	}
	if e.Kind == custody.EINTERNAL {
		// The violations of a broken output describe the output, which
		// is withheld: they stay on the ledger.
		d.Violations = nil
	}
	if d.Message == "" {
		d.Message = "internal error"
	}
	if !e.ExpiresAt.IsZero() {
		d.ExpiresAt = e.ExpiresAt.UTC().Format(time.RFC3339Nano)
	}
	return d
}

// writeError logs err in full and writes its safe form to the client.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	s.writeCallError(w, r, err, "")
}

// writeCallError is writeError for a call refused under trace.
func (s *Server) writeCallError(w http.ResponseWriter, r *http.Request, err error, trace string) {
	d := detailOf(err)
	d.TraceID = trace
	level := slog.LevelInfo
	if d.Kind == custody.EINTERNAL || d.Kind == custody.EUNAVAILABLE {
		level = slog.LevelError
	}
	s.log.Log(r.Context(), level, "request failed",
		"method", r.Method, "path", r.URL.Path, "kind", d.Kind, "err", err)
	writeJSON(w, statusOf(d.Kind), errorBody{Error: d})
}

// writeJSON writes v as the JSON response body with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"kind":"internal","message":"internal error"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// WriteError writes err to a client in the API's one error shape, with
// the status its kind maps to; an internal error's detail never leaves.
// The pages of Apps use it, so that every edge of the server maps kinds
// to statuses through the one table.
func WriteError(w http.ResponseWriter, err error) {
	d := detailOf(err)
	writeJSON(w, statusOf(d.Kind), errorBody{Error: d})
}

// WriteJSON writes v as a JSON response with status, as the API does.
func WriteJSON(w http.ResponseWriter, status int, v any) { writeJSON(w, status, v) }
