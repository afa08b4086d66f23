package gate

import (
	"context"
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
)

// maxTraceBytes bounds a caller's trace id.
const maxTraceBytes = 128

// decode is step 1: it settles the trace id and refuses argument bytes that
// cannot be validated and hashed faithfully: over the size cap, empty, or
// not strict JSON (invalid UTF-8, duplicate keys, numbers a double would
// not hold as written, ...). The rules are the shared reader's
// (internal/strictjson), applied through ledger.Check, so the arguments
// are refused here exactly when the contract or the ledger would refuse
// them later.
func (g *Gateway) decode(_ context.Context, f *flight) error {
	if err := settleTrace(f, uuid.NewString); err != nil {
		return err
	}
	if len(f.Args) > g.maxArgs {
		return invalid("", fmt.Sprintf("arguments are %d bytes, over the limit of %d", len(f.Args), g.maxArgs))
	}
	if len(f.Args) == 0 {
		return invalid("", "arguments are empty: send a JSON object, {} when there are none")
	}
	if err := ledger.Check(f.Args); err != nil {
		var se *ledger.SyntaxError
		if errors.As(err, &se) {
			return invalid("", fmt.Sprintf("arguments are not strict JSON: at byte %d: %s", se.Offset, se.Msg))
		}
		return invalid("", "arguments are not strict JSON: "+err.Error())
	}
	f.argsOK = true
	return nil
}

// settleTrace gives a call without a trace a new one (a UUID v4) and
// refuses a trace id that cannot be recorded as it is. A refused id is kept
// aside and the refusal is recorded under a new trace.
func settleTrace(f *flight, newID func() string) error {
	if f.Trace == "" {
		f.Trace, f.newTrace = newID(), true
		return nil
	}
	if ok := validTrace(f.Trace); ok {
		return nil
	}
	f.badTrace, f.Trace, f.newTrace = f.Trace, newID(), true
	return &custody.Error{Kind: custody.EINVALID,
		Message:    fmt.Sprintf("trace id must be 1 to %d bytes of printable UTF-8", maxTraceBytes),
		Violations: []custody.Violation{{Instance: "", Keyword: "trace_id", Message: "unusable trace id"}}}
}

// validTrace reports whether a trace id is short printable UTF-8.
func validTrace(s string) bool {
	if len(s) > maxTraceBytes || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// invalid returns an EINVALID error with one violation at instance.
func invalid(instance, msg string) *custody.Error {
	return &custody.Error{Kind: custody.EINVALID, Message: msg,
		Violations: []custody.Violation{{Instance: instance, Message: msg}}}
}
