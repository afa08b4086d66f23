package web

import (
	"net/http"

	"github.com/custody-dev/custody/httpjson"
)

// Defaults of the limits on request bodies: httpjson's.
const (
	// DefaultMaxBody caps every request body the API reads.
	DefaultMaxBody = httpjson.DefaultMaxBody
	// DefaultBodyTimeout bounds the time a request body may take to
	// arrive, so that a client trickling it cannot hold a connection.
	DefaultBodyTimeout = httpjson.DefaultBodyTimeout
)

// limits are the bounds of the request bodies the server reads.
func (s *Server) limits() httpjson.Limits {
	return httpjson.Limits{MaxBytes: s.maxBody, Timeout: s.bodyTimeout}
}

// readJSON reads the JSON body of r as every door does (httpjson.ReadStrict).
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return httpjson.ReadStrict(w, r, s.limits())
}

// readJSONBody reads a body declared application/json, under the
// server's limits, without judging it (httpjson.ReadBody).
func (s *Server) readJSONBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return httpjson.ReadBody(w, r, s.limits())
}

// LimitBodies caps the bodies of requests to a handler that reads them
// itself (MCP's) at max bytes: a declared larger one is answered 413
// before it is read, any other is cut at max.
func LimitBodies(h http.Handler, max int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > max {
			w.Header().Set("Connection", "close")
			httpjson.WriteError(w, httpjson.TooLarge(max))
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, max)
		}
		h.ServeHTTP(w, r)
	})
}
