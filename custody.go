// Package custody holds the vocabulary of the custody gateway: the calls an
// agent makes, the tools it may call, the approvals that hold consequential
// actions, the evidence entries that record all of it, and the store
// contracts that keep them. Every other package speaks in these types.
//
// An agent never touches a tool directly. A Call goes through one chokepoint
// (package gate) that validates the exact argument bytes against a JSON
// Schema contract, checks the envelope policy, holds consequential actions
// for a human approval bound to the exact action, runs the tool, validates
// its output and records everything on a hash-chained ledger.
package custody

import (
	"encoding/json"
	"time"
)

// Access says whether a tool only reads or also writes.
type Access string

// Access values, as spelled in a Clinical Action Envelope.
const (
	Read  Access = "READ"
	Write Access = "WRITE"
)

// Effect says what a tool's side effect costs if it is wrong.
type Effect string

// Effect values, as spelled in a Clinical Action Envelope.
const (
	EffectNone          Effect = "NONE"
	EffectReversible    Effect = "REVERSIBLE"
	EffectConsequential Effect = "CONSEQUENTIAL"
)

// ApprovalPolicy says whether a human must confirm each call of a tool.
type ApprovalPolicy string

// ApprovalPolicy values, as spelled in a Clinical Action Envelope.
const (
	NotRequired       ApprovalPolicy = "NOT_REQUIRED"
	HumanConfirmation ApprovalPolicy = "HUMAN_CONFIRMATION"
)

// ToolSpec declares one tool of an envelope: its contracts and its policy.
// Input and Output are schema refs understood by the contract registry
// (a full URI with JSON pointer, or a short name).
type ToolSpec struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Input       string         `json:"input"`
	Output      string         `json:"output"`
	Access      Access         `json:"access"`
	Effect      Effect         `json:"effect"`
	Approval    ApprovalPolicy `json:"approval"`
	// Scope names the resources the tool may touch. A tool whose scope is
	// "trace" may only touch resources bound to the calling trace.
	Scope string `json:"resource_scope"`
	// MaxCallsPerTrace bounds how often one trace may call the tool; 0
	// means unbounded.
	MaxCallsPerTrace int `json:"maximum_calls_per_trace"`
	// Links are custody links: arguments that must name something produced
	// earlier in the same trace.
	Links []Link `json:"links,omitempty"`
	// ArgumentsPolicy, when set, names a schema the arguments must match
	// as well as Input: a policy that narrows what the tool accepts (a
	// path to a prefix, an amount to a ceiling).
	ArgumentsPolicy string `json:"arguments_policy,omitempty"`
	// OutputPolicy, when set, names a schema the output must match as
	// well as Output.
	OutputPolicy string `json:"output_policy,omitempty"`
	// Refs names output fields whose values thread the chain of custody:
	// each is copied into the ledger entry's refs under its key. The key is
	// the ref name (e.g. "vms_update_id"), the value a JSON pointer into
	// the tool's output (e.g. "/vms_update_id").
	Refs map[string]string `json:"refs,omitempty"`
}

// Link is a custody link: the argument at Arg (a JSON pointer) must equal a
// ref recorded earlier in the same trace. With Approval set, the argument
// must name an approval that was approved; otherwise Ref names a ref key
// that an earlier successful call of Tool in the same trace recorded.
type Link struct {
	Arg      string `json:"arg"`
	Tool     string `json:"tool,omitempty"`
	Ref      string `json:"ref,omitempty"`
	Approval bool   `json:"approval,omitempty"`
}

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

// TimeFormat is the one layout used for every time written to the ledger:
// RFC 3339, UTC, microseconds.
const TimeFormat = "2006-01-02T15:04:05.000000Z"

// FormatTime renders t in TimeFormat. Every ledger entry carries one, so
// the digits are written directly rather than by interpreting the layout.
func FormatTime(t time.Time) string {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.Format(TimeFormat)
	}
	hour, min, sec := t.Clock()
	var b [len(TimeFormat)]byte
	put := func(i, v, width int) {
		for j := i + width - 1; j >= i; j-- {
			b[j] = byte('0' + v%10)
			v /= 10
		}
	}
	put(0, year, 4)
	b[4] = '-'
	put(5, int(month), 2)
	b[7] = '-'
	put(8, day, 2)
	b[10] = 'T'
	put(11, hour, 2)
	b[13] = ':'
	put(14, min, 2)
	b[16] = ':'
	put(17, sec, 2)
	b[19] = '.'
	put(20, t.Nanosecond()/1000, 6)
	b[26] = 'Z'
	return string(b[:])
}
