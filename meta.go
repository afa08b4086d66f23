package custody

import "strings"

// MetaPrefix begins the MCP _meta keys custody speaks under
// ("custody/trace_id", "custody/receipt" ...). A key under it that comes
// from anyone else (an upstream server, a client) is dropped from what
// custody relays: only custody speaks for custody.
const MetaPrefix = "custody/"

// ForeignMeta returns the members of meta that are not custody's (those
// not under MetaPrefix), as a new map; nil when none is left. It is the
// one rule by which every door and relay drops the custody/ keys that
// someone else sent.
func ForeignMeta[M ~map[string]V, V any](meta M) M {
	var out M
	for k, v := range meta {
		if strings.HasPrefix(k, MetaPrefix) {
			continue
		}
		if out == nil {
			out = make(M, len(meta))
		}
		out[k] = v
	}
	return out
}
