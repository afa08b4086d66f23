package custody

import (
	"slices"
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

// Envelope is an action envelope: the tools one gateway offers, each
// declared by its spec, under the envelope's id. What runs each tool is
// bound to its spec by the gateway (package gate).
type Envelope struct {
	ID    string
	Tools []ToolSpec
}

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
	// MaxRefusalsPerTrace bounds how many calls of the tool one trace may
	// have refused before every further call of it in the trace is
	// denied: probing stops. 0 means the gateway's default for a tool with
	// a calls-per-trace budget, and unbounded for one without.
	MaxRefusalsPerTrace int `json:"maximum_refusals_per_trace,omitempty"`
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
	// ApprovalWait is how long a front door may hold a HUMAN_CONFIRMATION
	// call open for its operator's decision, running it once approved and
	// answering in the same call; 0 answers pending_approval at once.
	ApprovalWait time.Duration `json:"-"`
	// Grants, when false, forbids grants for the tool: an operator must
	// approve each of its calls once. Nil or true allows them.
	Grants *bool `json:"grants,omitempty"`
	// Approvers say who may decide the tool's held calls: ApproverConsole,
	// an operator (through the console, the CLI, the API), who always may,
	// and ApproverClient, the user of the MCP client the call came from,
	// asked through elicitation. Nil: operators only. Only a configured
	// tool's policy names ApproverClient: a seed system's tool never does.
	Approvers []string `json:"-"`
	// Conditions are CEL conditions over each call (condition.go).
	Conditions []Condition `json:"conditions,omitempty"`
	// Rates limit how many calls of the tool run per window (rate.go).
	Rates []Rate `json:"rates,omitempty"`
}

// Who may decide a held call, as a tool's policy names them
// (ToolSpec.Approvers).
const (
	ApproverConsole = "console"
	ApproverClient  = "client"
)

// ClientApproves reports whether the user of the MCP client a held call
// came from may decide it (ToolSpec.Approvers names ApproverClient).
func (s ToolSpec) ClientApproves() bool { return slices.Contains(s.Approvers, ApproverClient) }

// GrantsAllowed reports whether an operator may grant a class of calls of
// the tool instead of approving each call.
func (s ToolSpec) GrantsAllowed() bool { return s.Grants == nil || *s.Grants }

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
