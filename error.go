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
	Err     error
}

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
