package httpjson

import (
	"cmp"
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
	// DefaultMaxBody caps a request body when Limits names no cap.
	DefaultMaxBody = 4 << 20
	// DefaultBodyTimeout bounds the time a request body may take to
	// arrive, so that a client trickling it cannot hold a connection.
	DefaultBodyTimeout = 30 * time.Second
)

// Limits bound a request body: its size and the time it may take to
// arrive; the defaults where zero.
type Limits struct {
	MaxBytes int64
	Timeout  time.Duration
}

// ReadBody reads a body declared application/json under l, without
// judging it. It refuses a body not declared application/json (415), one
// over the cap (413, read no further than the cap) and one that does not
// arrive in time (408).
func ReadBody(w http.ResponseWriter, r *http.Request, l Limits) ([]byte, error) {
	if err := checkContentType(r.Header.Get("Content-Type")); err != nil {
		return nil, err
	}
	return readBody(w, r, cmp.Or(l.MaxBytes, DefaultMaxBody), cmp.Or(l.Timeout, DefaultBodyTimeout))
}

// ReadStrict reads a body as ReadBody does and refuses, with 400 and the
// byte offset, one the ledger's strict checker refuses (duplicate
// members, invalid UTF-8, trailing data ...), so that every door reads a
// document the way the ledger will.
func ReadStrict(w http.ResponseWriter, r *http.Request, l Limits) ([]byte, error) {
	data, err := ReadBody(w, r, l)
	if err != nil {
		return nil, err
	}
	if err := ledger.Check(data); err != nil {
		return nil, NotStrict(err)
	}
	return data, nil
}

// Read reads a body as ReadStrict does and decodes it into v, refusing a
// member that is not spelt as one of v's fields. Every refusal is a
// custody error saying what, and where for a document that is not strict.
func Read(w http.ResponseWriter, r *http.Request, l Limits, v any) error {
	data, err := ReadStrict(w, r, l)
	if err != nil {
		return err
	}
	return decodeExact(data, v)
}

// NotStrict is the refusal of a body the strict checker refused with err.
func NotStrict(err error) error {
	var se *ledger.SyntaxError
	if errors.As(err, &se) {
		return custody.Errorf(custody.EINVALID, "the request body is not strict JSON: at byte %d: %s", se.Offset, se.Msg)
	}
	return custody.Errorf(custody.EINVALID, "the request body is not strict JSON: %v", err)
}

// TooLarge is the refusal (413) of a body over limit bytes.
func TooLarge(limit int64) error {
	return WithStatus(http.StatusRequestEntityTooLarge, "the request body is larger than %d bytes", limit)
}

// checkContentType accepts application/json, with no charset or UTF-8.
func checkContentType(ct string) error {
	if ct == "application/json" || strings.EqualFold(ct, "application/json; charset=utf-8") {
		return nil // what clients send, without parsing it
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return WithStatus(http.StatusUnsupportedMediaType, "the request body must be application/json, not %q", ct)
	}
	for k, v := range params {
		if k != "charset" || !strings.EqualFold(v, "utf-8") {
			return WithStatus(http.StatusUnsupportedMediaType, "the request body must be application/json in UTF-8, not %q", ct)
		}
	}
	return nil
}

// readBody reads the body under the deadline and the cap. A declared
// length over the cap is refused before a byte is read; any other body is
// read into a buffer of its declared length (or grown as it arrives) and
// never past the cap.
func readBody(w http.ResponseWriter, r *http.Request, max int64, timeout time.Duration) ([]byte, error) {
	if r.ContentLength > max {
		w.Header().Set("Connection", "close")
		return nil, TooLarge(max)
	}
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Now().Add(timeout)); err == nil {
		// The deadline is the body's: lift it after, so that nothing
		// reading the connection while the call runs times out.
		defer rc.SetReadDeadline(time.Time{})
	}
	data, err := readAll(http.MaxBytesReader(w, r.Body, max), r.ContentLength)
	if err == nil {
		return data, nil
	}
	w.Header().Set("Connection", "close")
	var big *http.MaxBytesError
	switch {
	case errors.As(err, &big):
		return nil, TooLarge(big.Limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, WithStatus(http.StatusRequestTimeout, "the request body did not arrive within %s", timeout)
	}
	return nil, &custody.Error{Kind: custody.EINVALID, Message: "the request body could not be read", Err: err}
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

// statusError is a custody error answered with a status of its own where
// the kind's status would say less: 405, 408, 413 and 415. The body is
// the one error shape all the same.
type statusError struct {
	status int
	err    *custody.Error
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

// WithStatus returns an EINVALID error answered with status.
func WithStatus(status int, format string, args ...any) error {
	return &statusError{status: status, err: custody.Errorf(custody.EINVALID, format, args...)}
}

// StatusFor returns the status err is answered with: its own (WithStatus)
// or its kind's (Status).
func StatusFor(err error) int {
	var se *statusError
	if errors.As(err, &se) {
		return se.status
	}
	return Status(custody.ErrorKind(err))
}
