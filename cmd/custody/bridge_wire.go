package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// What the bridge of custody mcp --stdio --server reads and writes: the
// little of a JSON-RPC message it routes by, event streams, and whole
// lines.

// readEvents calls deliver with the message of each event of an event stream
// as it comes, and reports whether deliver reported true for any. lastID,
// when not nil, is kept at the id of the last event.
func readEvents(body io.Reader, lastID *string, deliver func(msg []byte) bool) (answered bool) {
	r := bufio.NewReaderSize(body, 64<<10)
	var data [][]byte
	event := ""
	for {
		line, err := r.ReadBytes('\n')
		if err != nil && len(line) == 0 {
			return answered
		}
		line = bytes.TrimRight(line, "\r\n")
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch {
		case len(line) == 0:
			if len(data) > 0 && (event == "" || event == "message") {
				msg := bytes.Join(data, []byte("\n"))
				answered = deliver(msg) || answered
			}
			data, event = nil, ""
		case len(field) == 0: // a comment
		case string(field) == "data":
			data = append(data, bytes.Clone(value))
		case string(field) == "event":
			event = string(value)
		case string(field) == "id" && lastID != nil:
			*lastID = string(value)
		}
		if err != nil {
			return answered // an event cut off is no event
		}
	}
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// refusal is what a 401 or 403 of serve says, for a human.
func refusal(res *http.Response) string {
	body, _ := io.ReadAll(io.LimitReader(res.Body, 4<<10))
	if t := errorText(bytes.TrimSpace(body)); t != "" {
		return res.Status + ": " + t
	}
	return res.Status
}

// errorText is the message of an error body: custody's error shape, a
// JSON-RPC error, or plain text.
func errorText(body []byte) string {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	var inner struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) == nil && json.Unmarshal(e.Error, &inner) == nil && inner.Message != "" {
		return inner.Message
	}
	return strings.Join(strings.Fields(string(body)), " ")
}

// message is what the bridge reads of a JSON-RPC message: enough to
// route it, never to re-encode it.
type message struct {
	ID     json.RawMessage
	Method string
	Params struct {
		Name string         `json:"name"`
		URI  string         `json:"uri"`
		Meta map[string]any `json:"_meta"`
	}
	Result struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	// unreadable is set for a message that is no JSON object (a batch,
	// or bytes serve is to refuse).
	unreadable bool
}

func parseMessage(raw []byte) message {
	var env struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(raw, &env) != nil {
		return message{unreadable: true}
	}
	m := message{ID: env.ID, Method: env.Method}
	if string(env.ID) == "null" {
		m.ID = nil
	}
	json.Unmarshal(env.Params, &m.Params) // params of another shape route nothing
	json.Unmarshal(env.Result, &m.Result)
	return m
}

// isCall reports whether m is a request: it has a method and an id.
func (m message) isCall() bool { return m.Method != "" && len(m.ID) > 0 }

// isResponseTo reports whether r is the response to the request m.
func (r message) isResponseTo(m message) bool {
	return m.isCall() && r.Method == "" && len(r.ID) > 0 && sameID(r.ID, m.ID)
}

// sameID compares two JSON-RPC ids as JSON values.
func sameID(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	return json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && bytes.Equal(ca.Bytes(), cb.Bytes())
}

// lineWriter writes whole lines, one at a time, from any goroutine.
type lineWriter struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

// line writes msg and a newline in one Write. A message that spans lines
// (an event of several data lines, an indented body) is put on one: its
// line breaks can only be white space between JSON tokens.
func (l *lineWriter) line(msg []byte) {
	buf := make([]byte, 0, len(msg)+1)
	for _, c := range msg {
		if c == '\n' || c == '\r' {
			c = ' '
		}
		buf = append(buf, c)
	}
	buf = append(buf, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		_, l.err = l.w.Write(buf)
	}
}

// printf writes one formatted line.
func (l *lineWriter) printf(format string, args ...any) {
	l.line(fmt.Appendf(nil, format, args...))
}
