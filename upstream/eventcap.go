package upstream

import (
	"fmt"
	"io"
	"mime"
	"net/http"
)

// maxMessageBytes bounds one message custody reads from a server over a
// transport that carries every answer on one stream (stdio, the legacy
// SSE event stream), whichever call it answers: the go-sdk's own bound on
// a stdio line. A tool's smaller maxResultBytes is enforced once the
// message is read; an HTTP server's answers, one stream per call, are
// cut at the call's own cap (limitTransport).
const maxMessageBytes = 16 << 20

// errEventTooLarge ends an event stream with an event over its cap.
var errEventTooLarge = fmt.Errorf("the server sent an event larger than %d bytes: custody stopped reading its stream", maxMessageBytes)

// eventCapTransport caps each event of every event stream it receives at
// max bytes: a server that sends a larger one has its stream cut, as a
// stdio server's over-long line ends its session, instead of custody
// holding it whole.
type eventCapTransport struct {
	next http.RoundTripper
	max  int64
}

// RoundTrip implements http.RoundTripper.
func (t eventCapTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		resp.Body = &eventCapped{ReadCloser: resp.Body, max: t.max, empty: true}
	}
	return resp, err
}

// eventCapped reads an event stream, failing once one event (the bytes
// between two blank lines, less line ends) passes max.
type eventCapped struct {
	io.ReadCloser
	max, n int64
	// empty says the current line has nothing on it yet; cr that the
	// last byte was a carriage return.
	empty, cr bool
	err       error
}

func (e *eventCapped) Read(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.ReadCloser.Read(p)
	for _, b := range p[:n] {
		switch {
		case b == '\n' && e.cr:
			e.cr = false // the \n of a \r\n
		case b == '\n' || b == '\r':
			if e.empty {
				e.n = 0 // a blank line ends the event
			}
			e.empty, e.cr = true, b == '\r'
		default:
			e.empty, e.cr = false, false
			if e.n++; e.n > e.max {
				// Closed here, so that the server's write fails whether
				// or not the stream's reader closes it.
				e.err = errEventTooLarge
				e.ReadCloser.Close()
				return 0, e.err
			}
		}
	}
	return n, err
}
