package mcpserver

import (
	"context"
	"encoding/json"
	"sync"
)

// inflight are the tools/call requests the door answers itself (fastCall)
// while they run, so that a client's notifications/cancelled, which the
// SDK handles only for the requests it runs, reaches them too.
type inflight struct {
	mu    sync.Mutex
	calls map[string]context.CancelFunc
}

func newInflight() *inflight { return &inflight{calls: map[string]context.CancelFunc{}} }

// key names request id (its JSON) of session.
func inflightKey(session string, id json.RawMessage) (string, bool) {
	var v any
	if json.Unmarshal(id, &v) != nil {
		return "", false
	}
	switch v.(type) {
	case string, float64:
	default:
		return "", false
	}
	b, _ := json.Marshal(v) // a string or a number: its one spelling
	return session + "\x00" + string(b), true
}

// start registers request id of session and returns its context, which
// a cancellation ends, and the function that forgets it.
func (f *inflight) start(ctx context.Context, session string, id json.RawMessage) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	key, ok := inflightKey(session, id)
	if !ok {
		return ctx, cancel
	}
	f.mu.Lock()
	f.calls[key] = cancel
	f.mu.Unlock()
	return ctx, func() {
		f.mu.Lock()
		delete(f.calls, key)
		f.mu.Unlock()
		cancel()
	}
}

// cancelled cancels the request of session that body, a
// notifications/cancelled, names; it reports whether one was running.
// Anything else is left alone.
func (f *inflight) cancelled(session string, body []byte) bool {
	var msg struct {
		Method string `json:"method"`
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if session == "" || json.Unmarshal(body, &msg) != nil || msg.Method != "notifications/cancelled" {
		return false
	}
	key, ok := inflightKey(session, msg.Params.RequestID)
	if !ok {
		return false
	}
	f.mu.Lock()
	cancel, found := f.calls[key]
	f.mu.Unlock()
	if found {
		cancel()
	}
	return found
}
