package upstream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
)

// A tool's maxResultBytes is enforced as its result arrives, not after it
// was read whole: custody reads no more of an HTTP server's answer to a
// call than the cap and resultSlack; a stdio server's messages and the
// events of an event stream (the legacy SSE transport's, a streamable
// server's own) are read at most maxMessageBytes at a time. A result
// over the cap is refused and recorded (mcpHandler); the tool did run.
// The session whose answer was cut is ended, and a new one opened for the
// next call.

// resultSlack is what an answer to a call may hold beyond its result:
// the JSON-RPC envelope, the event stream's framing, and the progress
// and log notifications the server sends on the same stream.
const resultSlack = 1 << 20

// errResultTooLarge ends the read of an answer over its call's cap.
var errResultTooLarge = errors.New("the answer is larger than the tool's maxResultBytes allows: custody stopped reading it")

// resultLimit is the cap of one call's answer, and whether it was hit.
type resultLimit struct {
	max  int64
	over atomic.Bool
}

type resultLimitKey struct{}

// withResultLimit returns ctx capping the answers of the requests made
// with it to max bytes of result.
func withResultLimit(ctx context.Context, max int64) (context.Context, *resultLimit) {
	l := &resultLimit{max: max}
	return context.WithValue(ctx, resultLimitKey{}, l), l
}

// limitTransport caps the body of every answer to a request whose
// context carries a resultLimit (the call's POST, and any GET resuming
// its stream).
type limitTransport struct{ next http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (t limitTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if l, ok := r.Context().Value(resultLimitKey{}).(*resultLimit); ok && err == nil {
		resp.Body = &cappedBody{ReadCloser: resp.Body, left: l.max + resultSlack, l: l}
	}
	return resp, err
}

// cappedBody reads at most left bytes, and fails the read after them,
// marking its limit hit.
type cappedBody struct {
	io.ReadCloser
	left int64
	l    *resultLimit
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errResultTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	if b.left -= int64(n); b.left < 0 {
		b.l.over.Store(true)
		return 0, errResultTooLarge
	}
	return n, err
}
