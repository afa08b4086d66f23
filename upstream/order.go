package upstream

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The SDK hands a server's notifications to custody's handlers on
// goroutines of their own, while custody reads the answers of its own
// tools/call on a stdio server itself (rawcall.go): the progress and log
// messages a server sent just before its answer could reach the client
// after the answer, on a stream already closed, and be lost. relayOrder
// keeps them ahead: each answer waits until every such notification read
// before it has been relayed.

// orderWait bounds that wait: a notification the SDK never hands on (its
// session ended meanwhile) must not hold the answers after it.
const orderWait = 2 * time.Second

// relayOrder counts a session's progress and log notifications read and
// relayed.
type relayOrder struct {
	mu            sync.Mutex
	read, relayed int64
	// changed is closed, and replaced, at each relay.
	changed chan struct{}
}

// relayed reports whether msg is a notification custody relays.
func relayedNotification(msg jsonrpc.Message) bool {
	req, ok := msg.(*jsonrpc.Request)
	return ok && !req.IsCall() && (req.Method == "notifications/progress" || req.Method == "notifications/message")
}

// noteRead counts a notification handed to the SDK.
func (o *relayOrder) noteRead() {
	o.mu.Lock()
	o.read++
	o.mu.Unlock()
}

// mark returns how many were read so far: an answer read now waits for
// them.
func (o *relayOrder) mark() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.read
}

// noteRelayed counts a notification relayed.
func (o *relayOrder) noteRelayed() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.relayed++
	if o.changed != nil {
		close(o.changed)
		o.changed = nil
	}
}

// await returns once n notifications were relayed, ctx ends or orderWait
// passes; then the count is taken as reached, so that one notification
// lost holds no later answer.
func (o *relayOrder) await(ctx context.Context, n int64) {
	timeout := time.NewTimer(orderWait)
	defer timeout.Stop()
	for {
		o.mu.Lock()
		if o.relayed >= n {
			o.mu.Unlock()
			return
		}
		if o.changed == nil {
			o.changed = make(chan struct{})
		}
		changed := o.changed
		o.mu.Unlock()
		select {
		case <-changed:
			continue
		case <-ctx.Done():
		case <-timeout.C:
		}
		o.mu.Lock()
		o.relayed = max(o.relayed, n)
		o.mu.Unlock()
		return
	}
}
