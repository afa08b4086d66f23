// Package httpjson writes JSON responses and custody's one error shape
// over HTTP, with the one table that maps error kinds to statuses. It is a
// leaf: the API server and the seed systems' pages both write through it,
// so that every edge maps kinds to statuses the same way.
package httpjson

import (
	"encoding/json"
	"net/http"

	"github.com/custody-dev/custody"
)

// Status maps every error kind to its HTTP status: the one table. A
// pending approval is not a failure of the request: the action was
// accepted for a human decision, hence 202. Unknown kinds are internal.
func Status(kind string) int {
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

// ErrorBody is the one error shape:
// {"error":{"kind","message","violations"?,"approval_request_id"?,"expires_at"?,"trace_id"?,"receipt"?}}.
type ErrorBody struct {
	Error custody.ErrorDetail `json:"error"`
}

// Write writes v as the JSON response body with the given status.
func Write(w http.ResponseWriter, status int, v any) {
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

// WriteError writes err in the one error shape, with the status its kind
// maps to (or its own: WithStatus); an internal error's detail never
// leaves.
func WriteError(w http.ResponseWriter, err error) {
	Write(w, StatusFor(err), ErrorBody{Error: custody.DetailOf(err)})
}
