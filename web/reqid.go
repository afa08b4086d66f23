package web

import (
	"crypto/rand"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// RequestIDHeader carries the id of a request: the client's, when it is
// sane, else one the server makes. Every answer carries it, and every log
// line about the request names it.
const RequestIDHeader = "X-Request-Id"

// maxRequestID bounds a client's request id.
const maxRequestID = 128

// requestIDs makes request ids: a random prefix per server and a counter,
// unique without a read of the random source per request.
type requestIDs struct {
	prefix string
	n      atomic.Uint64
}

func newRequestIDs() *requestIDs {
	return &requestIDs{prefix: strings.ToLower(rand.Text()[:12]) + "-"}
}

func (g *requestIDs) next() string {
	return g.prefix + strconv.FormatUint(g.n.Add(1), 36)
}

// saneRequestID reports whether a client's request id may be echoed and
// logged: 1 to 128 printable ASCII characters, no spaces.
func saneRequestID(id string) bool {
	if id == "" || len(id) > maxRequestID {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return false
		}
	}
	return true
}

// requestID returns the id the answer to a request carries.
func requestID(w http.ResponseWriter) string { return w.Header().Get(RequestIDHeader) }

// withRequestID gives every request its id, on the answer, and logs each
// request at debug level.
func (s *Server) withRequestID(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(RequestIDHeader)
		if !saneRequestID(id) {
			id = s.ids.next()
		}
		w.Header().Set(RequestIDHeader, id)
		if !s.log.Enabled(r.Context(), slog.LevelDebug) {
			h.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		s.log.DebugContext(r.Context(), "request", "method", r.Method, "path", r.URL.Path,
			"status", sw.status, "duration", time.Since(start), "request_id", id)
	})
}

// statusWriter remembers the status of an answer for the request log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
