package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody/gate"
)

// rawTransport puts a rawConn between the SDK's client session and its
// connection to a stdio server, so custody can send a tools/call itself
// and take its result as the server's bytes.
type rawTransport struct {
	next mcp.Transport
	conn *rawConn // set by Connect
}

var _ mcp.Transport = (*rawTransport)(nil)

// Connect implements mcp.Transport.
func (t *rawTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.next.Connect(ctx)
	if err != nil {
		return nil, err
	}
	t.conn = &rawConn{Connection: c, waiting: map[string]chan rawAnswer{}}
	return t.conn, nil
}

// sdkRequestMeta are the _meta keys the SDK adds to each request of its
// own on 2026-07-28 (SEP-2575).
var sdkRequestMeta = []string{mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientInfo, mcp.MetaKeyClientCapabilities}

// Write implements mcp.Connection. Until it has them, it keeps the
// per-request _meta the SDK's own requests carry, to send the same.
func (c *rawConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() && !c.hasMeta.Load() {
		c.keepMeta(req.Params)
	}
	return c.Connection.Write(ctx, msg)
}

// keepMeta keeps the SDK's per-request keys of params' _meta, when it
// has them all.
func (c *rawConn) keepMeta(params json.RawMessage) {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	kept := map[string]json.RawMessage{}
	for _, k := range sdkRequestMeta {
		v, ok := p.Meta[k]
		if !ok {
			return
		}
		kept[k] = v
	}
	c.mu.Lock()
	c.meta = kept
	c.mu.Unlock()
	c.hasMeta.Store(true)
}

// requestMeta returns the SDK's per-request _meta keys, once it sent a
// request with them.
func (c *rawConn) requestMeta() (map[string]json.RawMessage, bool) {
	if !c.hasMeta.Load() {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.meta, true
}

// rawConn is a connection on which custody's own requests share the wire
// with the SDK's. Their ids are strings of custody's own ("custody-N"),
// never the SDK's integers, and their responses go to the caller waiting,
// never to the SDK; every other message passes through unchanged.
type rawConn struct {
	mcp.Connection
	next atomic.Int64

	// version is the session's protocol revision, set once it is
	// initialized.
	version string

	hasMeta atomic.Bool
	// order keeps the notifications read before an answer ahead of it.
	order   relayOrder
	mu      sync.Mutex
	waiting map[string]chan rawAnswer
	broken  error // why the connection ended; nil while it is up
	// meta are the SDK's per-request _meta keys (SEP-2575), as its own
	// requests carry them; set once, when hasMeta becomes true.
	meta map[string]json.RawMessage
}

// rawAnswer is the response to one of custody's requests, or why none
// will come.
type rawAnswer struct {
	resp *jsonrpc.Response
	err  error
	// notes is how many relayed notifications were read before it.
	notes int64
}

// Read implements mcp.Connection: the next message for the SDK.
func (c *rawConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			c.fail(err)
			return nil, err
		}
		if resp, ok := msg.(*jsonrpc.Response); ok {
			if ch := c.take(resp.ID); ch != nil {
				ch <- rawAnswer{resp: resp, notes: c.order.mark()}
				continue
			}
		}
		if relayedNotification(msg) {
			c.order.noteRead()
		}
		return msg, nil
	}
}

// Close implements mcp.Connection.
func (c *rawConn) Close() error {
	err := c.Connection.Close()
	c.fail(errors.New("the connection closed"))
	return err
}

// take returns the channel waiting for the response with id, and forgets
// it; nil when id is none of custody's.
func (c *rawConn) take(id jsonrpc.ID) chan rawAnswer {
	s, ok := id.Raw().(string)
	if !ok {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.waiting[s]
	delete(c.waiting, s)
	return ch
}

// fail ends every request waiting: the connection broke.
func (c *rawConn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken == nil {
		c.broken = err
	}
	for id, ch := range c.waiting {
		ch <- rawAnswer{err: err}
		delete(c.waiting, id)
	}
}

// call sends method with params and returns the result as the server
// sent it. A response with an error is returned as the *jsonrpc.Error it
// carries; a connection that broke after the request went out as
// errBroke wrapping why. When ctx ends first, the server is told
// (notifications/cancelled) and ctx's error returned.
func (c *rawConn) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("encode %s params: %w", method, err)
	}
	key := "custody-" + strconv.FormatInt(c.next.Add(1), 10)
	id, err := jsonrpc.MakeID(key)
	if err != nil {
		return nil, err
	}
	ch := make(chan rawAnswer, 1)
	c.mu.Lock()
	if c.broken != nil {
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: %w", errNotSent, c.broken)
	}
	c.waiting[key] = ch
	c.mu.Unlock()
	if err := c.Connection.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: raw}); err != nil {
		c.take(id)
		return nil, fmt.Errorf("%w: %w", errBroke, err)
	}
	select {
	case a := <-ch:
		switch {
		case a.err != nil:
			return nil, fmt.Errorf("%w: %w", errBroke, a.err)
		}
		c.order.await(ctx, a.notes)
		if a.resp.Error != nil {
			return nil, a.resp.Error
		}
		return a.resp.Result, nil
	case <-ctx.Done():
		if c.take(id) != nil {
			c.cancel(key, ctx)
		}
		return nil, ctx.Err()
	}
}

// cancel tells the server custody no longer waits for request key.
func (c *rawConn) cancel(key string, ctx context.Context) {
	params, _ := json.Marshal(map[string]any{"requestId": key, "reason": context.Cause(ctx).Error()})
	c.Connection.Write(context.WithoutCancel(ctx), &jsonrpc.Request{Method: "notifications/cancelled", Params: params})
}

var (
	// errNotSent: the connection had already ended; the request never
	// went out.
	errNotSent = errors.New("the session had ended")
	// errBroke: the request went out and the connection ended before
	// an answer came.
	errBroke = errors.New("the session broke before the server answered")
)

// statelessVersion is the protocol revision whose requests each carry
// the client's protocol version, info and capabilities in _meta.
const statelessVersion = "2026-07-28"

// errNotRaw sends a call to the SDK's path: custody does not send it
// itself.
var errNotRaw = errors.New("the SDK makes this call")

// callRaw makes a tools/call on raw and returns the result (toolResult).
// It returns errNotRaw, having sent nothing, where it cannot speak for
// the SDK yet, and after a result that asks the client for input (a
// multi round-trip request on 2026-07-28, which the SDK answers); the
// server holds nothing for a request it answered so, and the SDK asks
// again.
func (c *Conn) callRaw(ctx context.Context, raw *rawConn, params *mcp.CallToolParams) (json.RawMessage, error) {
	if raw.version == statelessVersion {
		meta, ok := raw.requestMeta()
		if !ok {
			return nil, errNotRaw
		}
		params.Meta = withRequestMeta(params.Meta, meta)
	}
	out, err := raw.call(ctx, "tools/call", params)
	var answered *jsonrpc.Error
	switch {
	case err == nil:
	case errors.Is(err, errNotSent):
		return nil, err
	case errors.As(err, &answered) || ctx.Err() != nil:
		return nil, fmt.Errorf("upstream %q: tools/call %s: %w", c.srv.Name, params.Name, err)
	default:
		return nil, fmt.Errorf("upstream %q: tools/call %s: %w: %w", c.srv.Name, params.Name, gate.ErrOutcomeUnknown, err)
	}
	res, err := toolResult(out)
	switch {
	case errors.Is(err, errNeedsInput):
		return nil, errNotRaw
	case err != nil:
		// The server answered with something that is not a tool result:
		// whatever it did, custody cannot say.
		return nil, fmt.Errorf("upstream %q: tools/call %s: decode the result: %w: %w", c.srv.Name, params.Name, gate.ErrOutcomeUnknown, err)
	}
	return res, nil
}

// withRequestMeta returns meta with the SDK's per-request keys added
// where meta has none of its own.
func withRequestMeta(meta mcp.Meta, sdk map[string]json.RawMessage) mcp.Meta {
	out := make(mcp.Meta, len(meta)+len(sdk))
	for k, v := range sdk {
		out[k] = v
	}
	for k, v := range meta {
		out[k] = v
	}
	return out
}
