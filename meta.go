package custody

// MetaPrefix begins the MCP _meta keys custody speaks under
// ("custody/trace_id", "custody/receipt" ...). A key under it that comes
// from anyone else (an upstream server, a client) is dropped from what
// custody relays: only custody speaks for custody.
const MetaPrefix = "custody/"
