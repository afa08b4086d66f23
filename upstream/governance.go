package upstream

import (
	"regexp"
	"strings"

	"github.com/custody-dev/custody"
)

// DefaultMaxResourceBytes caps a resource read whose policy sets no
// maxBytes.
const DefaultMaxResourceBytes = 4 << 20

// ResourcePolicy governs the resources whose exposed URIs a key matches.
// Resources are only read (access READ).
type ResourcePolicy struct {
	// MaxBytes caps the size of one read (text and decoded blobs);
	// DefaultMaxResourceBytes when zero. A larger resource is refused.
	MaxBytes int64
	Approval custody.ApprovalPolicy
}

// maxBytes returns the cap of one read.
func (p ResourcePolicy) maxBytes() int64 {
	if p.MaxBytes > 0 {
		return p.MaxBytes
	}
	return DefaultMaxResourceBytes
}

// ResourceGovernance holds the resource policies by exposed URI or URI
// glob ("docs+file:///handbook/*"). In a URI glob "*" matches any run of
// characters, "/" included, and "?" any one character. A resource no key
// matches is not listed, and reading it is denied.
type ResourceGovernance map[string]ResourcePolicy

// For returns the policy of the resource exposed as uri and the key that
// matched, as Governance.For does for tools.
func (g ResourceGovernance) For(uri string) (ResourcePolicy, string, bool) {
	return governs(g, uri, uriMatch)
}

// uriMatch reports whether the URI glob pattern matches uri.
func uriMatch(pattern, uri string) bool {
	var re strings.Builder
	re.WriteString("^")
	for _, r := range pattern {
		switch r {
		case '*':
			re.WriteString(".*")
		case '?':
			re.WriteString(".")
		default:
			re.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	re.WriteString("$")
	m, err := regexp.MatchString(re.String(), uri)
	return err == nil && m
}

// PromptPolicy governs the prompts an exposed name or glob matches.
type PromptPolicy struct {
	Approval custody.ApprovalPolicy
}

// PromptGovernance holds the prompt policies by exposed prompt name
// (SERVER__PROMPT, as tools are named) or glob. A prompt no key matches
// is not listed, and getting it is denied.
type PromptGovernance map[string]PromptPolicy

// For returns the policy of the prompt exposed as name and the key that
// matched.
func (g PromptGovernance) For(name string) (PromptPolicy, string, bool) {
	return governs(g, name, pathMatch)
}

// ExposedURI is the URI custody exposes an upstream resource (or resource
// template) under: the server's name, "+", the server's URI, so that a
// read routes back to the server that offers it. Server names hold no
// "+".
func ExposedURI(server, uri string) string { return server + "+" + uri }
