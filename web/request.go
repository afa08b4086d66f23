package web

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
)

// Defaults of the limits on request bodies.
const (
	// DefaultMaxBody caps every request body the API reads.
	DefaultMaxBody = 4 << 20
	// DefaultBodyTimeout bounds the time a request body may take to
	// arrive, so that a client trickling it cannot hold a connection.
	DefaultBodyTimeout = 30 * time.Second
)

// statusError is a custody error answered with a status of its own where
// the kind's status would say less: 405, 408, 413 and 415. The body is
// the one error shape all the same.
type statusError struct {
	status int
	err    *custody.Error
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

// withStatus returns an EINVALID error answered with status.
func withStatus(status int, format string, args ...any) error {
	return &statusError{status: status, err: custody.Errorf(custody.EINVALID, format, args...)}
}

// statusFor returns the status err is answered with.
func statusFor(err error, kind string) int {
	var se *statusError
	if errors.As(err, &se) {
		return se.status
	}
	return statusOf(kind)
}

// readJSON reads the JSON body of r. It refuses a body that is not
// declared application/json (415), one over the cap (413, read no further
// than the cap), one that does not arrive in time (408), and one the
// ledger's strict checker refuses (400: duplicate members, invalid UTF-8,
// trailing data ..., with the byte offset), so that every door of the API
// reads a document the way the ledger will.
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	data, err := s.readJSONBody(w, r)
	if err != nil {
		return nil, err
	}
	if err := ledger.Check(data); err != nil {
		return nil, notStrict(err)
	}
	return data, nil
}

// readJSONBody reads a body declared application/json, under the limits
// readJSON names, without judging it.
func (s *Server) readJSONBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if err := checkContentType(r.Header.Get("Content-Type")); err != nil {
		return nil, err
	}
	return s.readBody(w, r)
}

// notStrict is the refusal of a body the strict checker refused with err.
func notStrict(err error) error {
	var se *ledger.SyntaxError
	if errors.As(err, &se) {
		return custody.Errorf(custody.EINVALID, "the request body is not strict JSON: at byte %d: %s", se.Offset, se.Msg)
	}
	return custody.Errorf(custody.EINVALID, "the request body is not strict JSON: %v", err)
}

// checkContentType accepts application/json, with no charset or UTF-8.
func checkContentType(ct string) error {
	if ct == "application/json" || strings.EqualFold(ct, "application/json; charset=utf-8") {
		return nil // what clients send, without parsing it
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return withStatus(http.StatusUnsupportedMediaType, "the request body must be application/json, not %q", ct)
	}
	for k, v := range params {
		if k != "charset" || !strings.EqualFold(v, "utf-8") {
			return withStatus(http.StatusUnsupportedMediaType, "the request body must be application/json in UTF-8, not %q", ct)
		}
	}
	return nil
}

// readBody reads the body under the body deadline and the size cap. A
// declared length over the cap is refused before a byte is read; any
// other body is read into a buffer of its declared length (or grown as it
// arrives) and never past the cap.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength > s.maxBody {
		w.Header().Set("Connection", "close")
		return nil, tooLarge(s.maxBody)
	}
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Now().Add(s.bodyTimeout)); err == nil {
		// The deadline is the body's: lift it after, so that nothing
		// reading the connection while the call runs times out.
		defer rc.SetReadDeadline(time.Time{})
	}
	data, err := readAll(http.MaxBytesReader(w, r.Body, s.maxBody), r.ContentLength)
	if err == nil {
		return data, nil
	}
	w.Header().Set("Connection", "close")
	var big *http.MaxBytesError
	switch {
	case errors.As(err, &big):
		return nil, tooLarge(big.Limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, withStatus(http.StatusRequestTimeout, "the request body did not arrive within %s", s.bodyTimeout)
	}
	return nil, &custody.Error{Kind: custody.EINVALID, Message: "the request body could not be read", Err: err}
}

func tooLarge(limit int64) error {
	return withStatus(http.StatusRequestEntityTooLarge, "the request body is larger than %d bytes", limit)
}

// readAll reads body into a buffer of the declared length n when it is
// known, so that a body costs one allocation of its own size.
func readAll(body io.Reader, n int64) ([]byte, error) {
	if n < 0 {
		return io.ReadAll(body)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(body, buf); err != nil {
		return nil, fmt.Errorf("read %d bytes of body: %w", n, err)
	}
	return buf, nil
}

// LimitBodies caps the bodies of requests to a handler that reads them
// itself (MCP's) at max bytes: a declared larger one is answered 413
// before it is read, any other is cut at max.
func LimitBodies(h http.Handler, max int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > max {
			w.Header().Set("Connection", "close")
			writeJSON(w, http.StatusRequestEntityTooLarge, errorBody{Error: custody.DetailOf(tooLarge(max))})
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, max)
		}
		h.ServeHTTP(w, r)
	})
}
