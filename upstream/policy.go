package upstream

import (
	"encoding/json"
	"path"
	"strings"
	"time"

	"github.com/custody-dev/custody"
)

// Policy governs one exposed tool in the words of the Clinical Action
// Envelope. A tool nobody governs is not exposed.
type Policy struct {
	Access           custody.Access
	Effect           custody.Effect
	Approval         custody.ApprovalPolicy
	MaxCallsPerTrace int
	// MaxRefusalsPerTrace is the refusal budget per trace (see
	// custody.ToolSpec); 0: the gateway's default.
	MaxRefusalsPerTrace int
	// Timeout bounds each run; the gateway's deadline when zero.
	Timeout time.Duration
	// ApprovalWait is how long a front door holds a HUMAN_CONFIRMATION
	// call open for its decision (custody.ToolSpec.ApprovalWait); 0: not.
	ApprovalWait time.Duration
	// Arguments is a schema the arguments must match as well as the
	// tool's own input schema: a narrowing. Nil: none.
	Arguments json.RawMessage
	// Output is a schema the tool's structured output must match as well
	// as its own output schema. Nil: none.
	Output json.RawMessage
	// OpenArguments leaves the tool's input schema as the server declared
	// it: members it does not declare are then passed on.
	OpenArguments bool
	// Editable names top-level string arguments an operator may edit
	// before approving a HUMAN_CONFIRMATION call.
	Editable []string
	// MaxResultBytes bounds the size of a result, as JSON; a larger one
	// is refused. DefaultMaxResultBytes when zero.
	MaxResultBytes int64
	// Grants, when false, forbids grants for the tool (custody.ToolSpec).
	Grants *bool
	// Approvers say who may decide a held call (custody.ToolSpec).
	Approvers []string
	// Conditions and Rates are the tool's CEL conditions and rate limits
	// (custody.ToolSpec).
	Conditions []custody.Condition
	Rates      []custody.Rate
}

// DefaultMaxResultBytes bounds a tool's result when its policy does not:
// the MCP door's own request body limit.
const DefaultMaxResultBytes = 4 << 20

// maxResultBytes is the policy's bound on a result.
func (p Policy) maxResultBytes() int64 {
	if p.MaxResultBytes > 0 {
		return p.MaxResultBytes
	}
	return DefaultMaxResultBytes
}

// Governance holds the policies by exposed tool name or by glob ("fs__read_*").
type Governance map[string]Policy

// For returns the policy of the tool exposed as name and the key that
// matched: an exact key, else the most specific glob that matches (the one
// with the most literal characters; among equals, the first in byte
// order). ok is false when no key matches: the tool is not governed.
func (g Governance) For(name string) (p Policy, key string, ok bool) {
	return governs(g, name, pathMatch)
}

// pathMatch is path.Match, false for a malformed pattern.
func pathMatch(pattern, name string) bool {
	m, err := path.Match(pattern, name)
	return err == nil && m
}

// governs returns the entry of g that governs name: an exact key, else the
// most specific glob that match says matches name (the one with the most
// literal characters; among equals, the first in byte order).
func governs[P any](g map[string]P, name string, match func(pattern, name string) bool) (p P, key string, ok bool) {
	if p, ok := g[name]; ok {
		return p, name, true
	}
	best := -1
	for k, pol := range g {
		if !isGlob(k) || !match(k, name) {
			continue
		}
		score := literalChars(k)
		if score > best || (score == best && k < key) {
			best, key, p = score, k, pol
		}
	}
	return p, key, best >= 0
}

// isGlob reports whether k holds a glob metacharacter.
func isGlob(k string) bool { return strings.ContainsAny(k, "*?[") }

// literalChars counts the characters of a glob outside its wildcards.
func literalChars(glob string) int {
	n, inClass := 0, false
	for _, c := range glob {
		switch {
		case inClass:
			inClass = c != ']'
		case c == '[':
			inClass = true
		case c != '*' && c != '?':
			n++
		}
	}
	return n
}

// ExposedName is the name custody exposes an upstream MCP tool under:
// the server's name, two underscores, the tool's name (function names of
// OpenAI-compatible APIs allow no dots).
func ExposedName(server, tool string) string { return server + "__" + tool }
