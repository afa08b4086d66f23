package upstream

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// clientOptions are the handlers of what the server sends custody
// unasked: list changes, resource updates.
func (c *Conn) clientOptions() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			go c.relist()
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			go c.relistFeatures()
		},
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			go c.relistFeatures()
		},
		ResourceUpdatedHandler: c.resourceUpdated,
	}
}
