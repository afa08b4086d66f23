package upstream

import (
	"errors"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/custody-dev/custody"
)

// Err returns why the server has no session now, nil while it has one.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.session != nil {
		return nil
	}
	return c.down
}

// Listed reports whether a session was ever had: a server down since
// Dial has listed no tools, resources or prompts yet.
func (c *Conn) Listed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.listed
}

// urlSecrets matches what a URL in an error may carry that is a secret:
// its user information and its query.
var urlSecrets = regexp.MustCompile(`(?i)(\b[a-z][a-z0-9+.-]*://)[^/\s"'@]*@|\?[^\s"']*`)

// redactURLs removes the user information and the query of every URL in
// an error's text, which /healthz shows to anyone: a token in a server's
// URL must not be.
func redactURLs(msg string) string {
	return urlSecrets.ReplaceAllStringFunc(msg, func(m string) string {
		if strings.HasPrefix(m, "?") {
			return "?…"
		}
		scheme, _, _ := strings.Cut(m, "//")
		return scheme + "//…@"
	})
}

// DownServer is an upstream MCP server without a session.
type DownServer struct {
	Name string
	// Err is the last error of its session or of an attempt to start one.
	Err string
	// Waiting says it has been down since custody started: its tools are
	// not listed yet.
	Waiting bool
	// Connect says it is down until an operator connects it (the
	// authorization code grant, not connected or no longer).
	Connect bool
}

// Down returns the servers that have no session now, in configuration
// order; none when every server is up.
func (s *Set) Down() []DownServer {
	var out []DownServer
	for _, c := range s.conns {
		err := c.Err()
		if err == nil {
			continue
		}
		out = append(out, DownServer{Name: c.Name(), Err: redactURLs(err.Error()), Waiting: !c.Listed(),
			Connect: errors.Is(err, ErrNotConnected)})
	}
	return out
}

// mayGovern reports whether key, a governance key of exposed names or
// URIs, may govern something exposed under one of prefixes (the exposed
// prefixes of servers that have listed nothing yet): it begins with one,
// or it is a glob whose literal beginning may. A key that matches
// nothing is then no typo yet: it cannot be checked until those servers
// list what they offer.
func mayGovern(key string, prefixes []string) bool {
	lit := key
	if i := strings.IndexAny(key, "*?["); i >= 0 {
		lit = key[:i]
	}
	return slices.ContainsFunc(prefixes, func(p string) bool {
		return strings.HasPrefix(key, p) || (isGlob(key) && strings.HasPrefix(p, lit))
	})
}

// ResourceKey is one resource governance key: a URI or URI glob that
// reads may name, and its policy.
type ResourceKey struct {
	Pattern  string
	MaxBytes int64
	Approval custody.ApprovalPolicy
}

// ResourceKeys returns the resource governance keys in byte order, each
// with the cap of one read.
func (s *Set) ResourceKeys() []ResourceKey {
	var out []ResourceKey
	for _, k := range slices.Sorted(maps.Keys(s.cfg.Resources)) {
		p := s.cfg.Resources[k]
		out = append(out, ResourceKey{Pattern: k, MaxBytes: p.maxBytes(), Approval: p.Approval})
	}
	return out
}
