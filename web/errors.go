package web

import (
	"log/slog"
	"net/http"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/httpjson"
)

// statusOf maps an error kind to its HTTP status (httpjson.Status: the
// one table).
func statusOf(kind string) int { return httpjson.Status(kind) }

// errorBody is the one error shape of the API.
type errorBody = httpjson.ErrorBody

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
func writeJSON(w http.ResponseWriter, status int, v any) { httpjson.Write(w, status, v) }
