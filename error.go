package custody

import (
	"errors"
	"fmt"
	"time"
)

// Error kinds: a small closed set, mapped once at each edge (HTTP status,
// MCP tool error, CLI exit code).
const (
	EINVALID      = "invalid"
	EDENIED       = "denied"
	EPENDING      = "pending_approval"
	EEXPIRED      = "expired"
	ENOTFOUND     = "not_found"
	ECONFLICT     = "conflict"
	EUNAVAILABLE  = "unavailable"
	EUNAUTHORIZED = "unauthorized"
	EINTERNAL     = "internal"
)

// Violation is one way a document fails its schema.
type Violation struct {
	// Instance is the JSON pointer of the offending value ("" is the root).
	Instance string `json:"instance"`
	// Keyword is the schema keyword location that failed.
	Keyword string `json:"keyword"`
	Message string `json:"message"`
}

// Error is the error every custody package returns to its callers. Message
// is safe to show to an agent; Err carries internal detail for the log only.
type Error struct {
	Kind       string
	Message    string
	Violations []Violation
	// ApprovalRequestID and ExpiresAt are set on EPENDING and EEXPIRED.
	ApprovalRequestID string
	ExpiresAt         time.Time
	// Receipt is the ledger entry that recorded the refusal, when there is one.
	Receipt *Receipt
	// Outcome is OutcomeUnknown for a call whose side effect may have
	// happened though no answer came; "" otherwise.
	Outcome string
	// RetryAfter is how long a caller refused by a rate limit should wait
	// before calling again; 0 otherwise.
	RetryAfter time.Duration
	Err        error
}

// OutcomeUnknown is the Outcome of a call whose request reached a tool
// with a side effect and whose answer never came: check before retrying.
const OutcomeUnknown = "unknown"

// Error implements error.
func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Kind, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Kind, e.Message)
}

// Unwrap returns the internal cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error of the given kind with a formatted message.
func Errorf(kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// ErrorKind returns the kind of err: the Kind of the first *Error in its
// chain, or EINTERNAL for any other non-nil error, or "" for nil.
func ErrorKind(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return EINTERNAL
}

// ErrorMessage returns the message of err that is safe to show to a caller.
// Errors that are not *Error become "internal error": their text stays in
// the log.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// AsError returns the first *Error in err's chain, or an EINTERNAL *Error
// wrapping err.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Kind: EINTERNAL, Message: "internal error", Err: err}
}

// ErrorDetail is what of an error may be shown to a caller: the one shape
// every edge (HTTP, MCP, CLI) writes under "error".
type ErrorDetail struct {
	Kind              string      `json:"kind"`
	Message           string      `json:"message"`
	Violations        []Violation `json:"violations,omitempty"`
	ApprovalRequestID string      `json:"approval_request_id,omitempty"`
	ExpiresAt         string      `json:"expires_at,omitempty"`
	// TraceID is the trace of a refused call: a call held for approval is
	// retried under the same trace.
	TraceID string   `json:"trace_id,omitempty"`
	Receipt *Receipt `json:"receipt,omitempty"`
	// Outcome is "unknown" for a call that may have taken effect though
	// no answer came (Error.Outcome).
	Outcome string `json:"outcome,omitempty"`
	// RetryAfter is the whole seconds to wait before calling again, for a
	// call refused by a rate limit (Error.RetryAfter, rounded up).
	RetryAfter int64 `json:"retry_after,omitempty"`
}

// DetailOf returns the part of err that is safe to show a caller: the
// Message of an *Error (safe by its contract) or "internal error" for any
// other error, whose text stays in the log. An internal error's
// violations describe a withheld output and stay on the ledger.
func DetailOf(err error) ErrorDetail {
	e := AsError(err)
	d := ErrorDetail{Kind: e.Kind, Message: e.Message, Violations: e.Violations,
		ApprovalRequestID: e.ApprovalRequestID, Receipt: e.Receipt, Outcome: e.Outcome}
	if e.Kind == EINTERNAL {
		d.Violations = nil
	}
	if d.Message == "" {
		d.Message = "internal error"
	}
	if !e.ExpiresAt.IsZero() {
		d.ExpiresAt = FormatTime(e.ExpiresAt)
	}
	if e.RetryAfter > 0 {
		d.RetryAfter = int64((e.RetryAfter + time.Second - 1) / time.Second)
	}
	return d
}
