package custody

import "encoding/json"

// Call is one request from an agent to run a tool.
type Call struct {
	// Trace groups the calls of one chain of custody. Empty means a new
	// trace is started.
	Trace string `json:"trace_id,omitempty"`
	Tool  string `json:"tool"`
	// Args holds the exact argument bytes as received. They are validated
	// and recorded as they are: never decoded into a struct and re-encoded.
	Args json.RawMessage `json:"arguments"`
	// Actor names who asked: the agent token id, or "cli".
	Actor string `json:"-"`
	// Via names the front door: "http", "mcp", "cli", "agent".
	Via string `json:"-"`
	// Meta is the request's _meta as an MCP client sent it, less the keys
	// only custody speaks under ("custody/..."): a tool that relays to an
	// MCP server passes it on. Nil when there is none.
	Meta map[string]any `json:"-"`
}

// Result is the outcome of a call that ran.
type Result struct {
	Trace   string          `json:"trace_id"`
	Output  json.RawMessage `json:"output"`
	Receipt Receipt         `json:"receipt"`
	// ToolError says the tool ran and reported a failure of its own (an
	// MCP result with isError): Output is what it said, recorded as a
	// call.failed entry.
	ToolError bool `json:"tool_error,omitempty"`
}

// Receipt proves that an entry is on the ledger.
type Receipt struct {
	Seq  int64  `json:"seq"`
	Hash string `json:"hash"`
}
