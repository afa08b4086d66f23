package upstream

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sseTransport reaches a server over the legacy HTTP+SSE transport (MCP
// 2024-11-05) with an event stream that outlives the context it was
// opened under: mcp.SSEClientTransport ties its hanging GET to the
// context of Connect, so a session opened under a caller's deadline
// would end with it, as a streamable HTTP session does not. Connect
// still gives up when ctx ends before the stream is open.
type sseTransport struct {
	t *mcp.SSEClientTransport
}

var _ mcp.Transport = sseTransport{}

// Connect implements mcp.Transport.
func (s sseTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	stream, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	conn, err := s.t.Connect(stream)
	if !stop() {
		// ctx ended while the stream was being opened.
		if err == nil {
			conn.Close()
		}
		cancel()
		return nil, ctx.Err()
	}
	if err != nil {
		cancel()
		return nil, err
	}
	return sseConn{Connection: conn, cancel: cancel}, nil
}

// sseConn is an SSE connection whose stream ends when it is closed.
type sseConn struct {
	mcp.Connection
	cancel context.CancelFunc
}

// Close implements mcp.Connection.
func (c sseConn) Close() error {
	err := c.Connection.Close()
	c.cancel()
	return err
}
