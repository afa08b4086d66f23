// Package downstream carries, in a call's context, the MCP client session
// the call came from, so that what an upstream server sends back while it
// works on the call reaches that client and no other: its progress
// notifications, its log messages, and its own requests of the client
// (sampling/createMessage, elicitation/create, roots/list).
//
// The MCP door puts the Caller in the context of every call it passes
// on; an upstream connection looks it up for each call in flight.
//
//lint:file-ignore SA1019 roots and sampling are deprecated by SEP-2577 and still relayed for the clients and servers that use them.
package downstream

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Caller is the client session a call came from, and who made it.
type Caller struct {
	// Session is the client's session on custody's MCP door.
	Session *mcp.ServerSession
	// ProgressToken is the token the client asked progress under; nil
	// when it asked for none.
	ProgressToken any
	// Meta is the _meta of the client's request, for the server.
	Meta map[string]any
	// Trace and Actor are the call's, to record what crosses for it.
	Trace, Actor string
}

type callerKey struct{}

// With returns ctx carrying c.
func With(ctx context.Context, c *Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// From returns the caller ctx carries, if any.
func From(ctx context.Context) (*Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(*Caller)
	return c, ok && c != nil && c.Session != nil
}

// Declared reports whether the client declared the capability named
// ("sampling", "elicitation", "roots") when it initialised.
func (c *Caller) Declared(feature string) bool {
	p := c.Session.InitializeParams()
	if p == nil || p.Capabilities == nil {
		return false
	}
	caps := p.Capabilities
	switch feature {
	case "sampling":
		return caps.Sampling != nil
	case "elicitation":
		return caps.Elicitation != nil
	case "roots":
		return caps.RootsV2 != nil
	}
	return false
}
