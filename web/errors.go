package web

import (
	"log/slog"
	"net/http"
	"net/url"
	"strconv"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/httpjson"
)

// errorBody is the one error shape of the API.
type errorBody = httpjson.ErrorBody

// writeError logs err in full and writes its safe form to the client.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	s.writeCallError(w, r, err, "")
}

// writeCallError is writeError for a call refused under trace. A 401
// names the scheme the client must use (WWW-Authenticate: Bearer); a
// call held for approval points at its approval (Location).
func (s *Server) writeCallError(w http.ResponseWriter, r *http.Request, err error, trace string) {
	d := custody.DetailOf(err)
	d.TraceID = trace
	level := slog.LevelInfo
	if d.Kind == custody.EINTERNAL || d.Kind == custody.EUNAVAILABLE {
		level = slog.LevelError
	}
	s.log.Log(r.Context(), level, "request failed", "method", r.Method, "path", r.URL.Path,
		"kind", d.Kind, "request_id", requestID(w), "err", err)
	status := httpjson.StatusFor(err)
	switch {
	case status == http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", s.challenge(err))
	case d.Kind == custody.EPENDING && d.ApprovalRequestID != "":
		w.Header().Set("Location", "/v1/approvals/"+url.PathEscape(d.ApprovalRequestID))
	case d.RetryAfter > 0:
		// A rate limit's refusal says when its window ends (RFC 9110).
		w.Header().Set("Retry-After", strconv.FormatInt(d.RetryAfter, 10))
	}
	writeJSON(w, status, errorBody{Error: d})
}

// writeJSON writes v as the JSON response body with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) { httpjson.Write(w, status, v) }

// writeRaw writes body, a JSON document, with the given status.
func writeRaw(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(body)
}
