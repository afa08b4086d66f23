package gate

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
)

// maxTraceBytes bounds a caller's trace id.
const maxTraceBytes = 128

// decode is step 1: it settles the trace id and refuses argument bytes that
// cannot be validated and hashed faithfully: over the size cap, empty, not
// strict JSON (invalid UTF-8, duplicate keys) or holding integers beyond
// ±2^53.
func (g *Gateway) decode(_ context.Context, f *flight) error {
	if err := settleTrace(f, g.ids.newID); err != nil {
		return err
	}
	if len(f.Args) > g.maxArgs {
		return invalid("", fmt.Sprintf("arguments are %d bytes, over the limit of %d", len(f.Args), g.maxArgs))
	}
	if len(f.Args) == 0 {
		return invalid("", "arguments are empty: send a JSON object, {} when there are none")
	}
	if err := g.check(f.Args); err != nil {
		var se *ledger.SyntaxError
		if errors.As(err, &se) {
			return invalid("", fmt.Sprintf("arguments are not strict JSON: at byte %d: %s", se.Offset, se.Msg))
		}
		return invalid("", "arguments are not strict JSON: "+err.Error())
	}
	f.argsOK = true
	return nil
}

// check is ledger.Check with a pooled canonicalizer.
func (g *Gateway) check(raw []byte) error {
	z, _ := g.canons.Get().(*ledger.Canonicalizer)
	if z == nil {
		z = new(ledger.Canonicalizer)
	}
	err := z.Check(raw)
	g.canons.Put(z)
	return err
}

// settleTrace gives a call without a trace a new one (a UUID v4) and
// refuses a trace id that cannot be recorded as it is. A refused id is kept
// aside and the refusal is recorded under a new trace.
func settleTrace(f *flight, newID func() string) error {
	if f.Trace == "" {
		f.Trace = newID()
		return nil
	}
	if ok := validTrace(f.Trace); ok {
		return nil
	}
	f.badTrace, f.Trace = f.Trace, newID()
	return &custody.Error{Kind: custody.EINVALID,
		Message:    fmt.Sprintf("trace id must be 1 to %d bytes of printable UTF-8", maxTraceBytes),
		Violations: []custody.Violation{{Instance: "", Keyword: "trace_id", Message: "unusable trace id"}}}
}

// idSource makes UUID v4 ids from crypto/rand read in blocks: one read
// of the system's source per 256 ids rather than one per call. Each
// processor takes ids from a block of its own, so that callers do not
// queue for one. The zero value is ready to use.
type idSource struct {
	blocks sync.Pool // of *bufio.Reader over crypto/rand
}

func (s *idSource) newID() string {
	r, _ := s.blocks.Get().(*bufio.Reader)
	if r == nil {
		r = bufio.NewReaderSize(rand.Reader, 16*256)
	}
	u, err := uuid.NewRandomFromReader(r)
	s.blocks.Put(r)
	if err != nil {
		panic(fmt.Sprintf("gate: crypto/rand failed: %v", err)) // as uuid.New does
	}
	return u.String()
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
