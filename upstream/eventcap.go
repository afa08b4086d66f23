package upstream

import (
	"bytes"
	"encoding/json"
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
// holding it whole. With order set, it counts the progress and log
// notifications read, as custody's own stdio connection does, so that an
// answer read after them waits until they were relayed (order.go).
type eventCapTransport struct {
	next  http.RoundTripper
	max   int64
	order *relayOrder
}

// RoundTrip implements http.RoundTripper.
func (t eventCapTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		resp.Body = &eventCapped{ReadCloser: resp.Body, max: t.max, empty: true, order: t.order}
	}
	return resp, err
}

// eventCapped reads an event stream, failing once one event (the bytes
// between two blank lines, less line ends) passes max, and counting in
// order the notifications it reads.
type eventCapped struct {
	io.ReadCloser
	max, n int64
	// empty says the current line has nothing on it yet; cr that the
	// last byte was a carriage return.
	empty, cr bool
	err       error
	order     *relayOrder
	// line is the current line and data the event's data lines, each
	// kept up to maxNoteBytes: a notification custody relays is small.
	line, data []byte
	long       bool
}

// maxNoteBytes bounds the event an eventCapped looks into.
const maxNoteBytes = 64 << 10

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
				e.event()
			} else {
				e.endLine()
			}
			e.empty, e.cr = true, b == '\r'
		default:
			e.empty, e.cr = false, false
			if e.order != nil && len(e.line) < maxNoteBytes {
				e.line = append(e.line, b)
			}
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

// endLine keeps the line ending now if it is a data line.
func (e *eventCapped) endLine() {
	if e.order == nil {
		return
	}
	if v, ok := bytes.CutPrefix(e.line, []byte("data:")); ok {
		v, _ = bytes.CutPrefix(v, []byte(" "))
		if len(e.line) >= maxNoteBytes || len(e.data)+len(v) > maxNoteBytes {
			e.long = true
		} else {
			e.data = append(e.data, v...)
			e.data = append(e.data, '\n')
		}
	}
	e.line = e.line[:0]
}

// event ends an event, counting it when it is a notification custody
// relays.
func (e *eventCapped) event() {
	if e.order == nil {
		return
	}
	if !e.long && len(e.data) > 0 && relayedNote(e.data) {
		e.order.noteRead()
	}
	e.line, e.data, e.long = e.line[:0], e.data[:0], false
}

// relayedNote reports whether data, one JSON-RPC message, is a progress
// or log notification.
func relayedNote(data []byte) bool {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(data, &m) != nil || m.ID != nil {
		return false
	}
	return m.Method == "notifications/progress" || m.Method == "notifications/message"
}
