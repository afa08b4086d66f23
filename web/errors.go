package web

import (
	"encoding/json"
	"log/slog"
	"net/http"

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
	Error custody.ErrorDetail `json:"error"`
}

// writeError logs err in full and writes its safe form to the client.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	s.writeCallError(w, r, err, "")
}

// writeCallError is writeError for a call refused under trace.
func (s *Server) writeCallError(w http.ResponseWriter, r *http.Request, err error, trace string) {
	d := custody.DetailOf(err)
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
	d := custody.DetailOf(err)
	writeJSON(w, statusOf(d.Kind), errorBody{Error: d})
}

// WriteJSON writes v as a JSON response with status, as the API does.
func WriteJSON(w http.ResponseWriter, status int, v any) { writeJSON(w, status, v) }
