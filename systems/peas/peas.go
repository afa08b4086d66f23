// Package peas is the highway pile-up early alert chain on the gateway:
//
//	detect_pileup_signature → compose_ops_brief → request_approval →
//	issue_vms_update → notify_driver
//
// The chain of custody runs roadside sensors → ops brief → human approval
// → variable message sign → in-car warning, and no step may be skipped or
// forged: every tool runs behind the gateway, which validates the seed's
// contracts, checks the custody links between the steps and holds the sign
// update for an operator's approval of that exact sign and message.
//
// Detection is deterministic; a language model only words the brief, and
// every brief it writes passes the brief guard or is replaced by the
// template brief.
package peas

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/systems/agent"
	"github.com/custody-dev/custody/systems/llm"
)

// Tool names, as the contract spells them.
const (
	ToolDetect  = "detect_pileup_signature"
	ToolBrief   = "compose_ops_brief"
	ToolApprove = "request_approval"
	ToolVMS     = "issue_vms_update"
	ToolNotify  = "notify_driver"
)

// contractID is the $id of the seed contract that holds the tool schemas.
const contractID = "https://peas.local/schemas/v0/tools.json"

// Ref returns the schema ref of tool i's input or output ("input",
// "output"), in the order the contract lists the tools.
func Ref(i int, io string) string {
	return contractID + "#/tools/" + strconv.Itoa(i) + "/" + io
}

// State namespaces the system keeps in the StateStore. The ledger is the
// evidence; these are the working documents the console shows.
const (
	NSSignatures    = "peas.signatures"
	NSBriefs        = "peas.briefs"
	NSRequests      = "peas.requests"
	NSSigns         = "peas.signs"
	NSUpdates       = "peas.vms"
	NSNotifications = "peas.notifications"
	NSCorridors     = "peas.corridors"
	NSVoice         = "peas.voice"
)

// Validator validates a document against a schema ref.
type Validator interface {
	Validate(ref string, raw []byte) error
}

// Tracer makes each hop of a chain a span under one prediction root span
// per chain. A nil Tracer means tracing is off and the brief's prediction
// ids are null.
type Tracer interface {
	// Start starts the span of hop name in the chain keyed by chain (the
	// gateway trace the chain's calls join), under the chain's root span,
	// which it starts with the chain's first hop. It returns ctx carrying
	// the hop's span, the hex trace id (32 digits) and the hop's hex span
	// id (16 digits), and a function that ends the hop's span.
	Start(ctx context.Context, chain, name string) (ctx2 context.Context, traceID, spanID string, end func())
	// End ends the root span of chain: the chain is over.
	End(chain string)
}

// Deps are what the system needs. Approvals and State are required.
type Deps struct {
	Approvals *approval.Service
	State     custody.StateStore
	// Ledger records brief guard breaches; breaches are only logged
	// when nil.
	Ledger custody.Ledger
	// Schemas offers the tool input schemas to a model (a contract
	// registry's Bundle); models see a bare object schema when nil.
	Schemas agent.Schemas
	// LLM routes the hops; the template backend everywhere when empty.
	LLM llm.Router
	// Tracer makes each hop a span; nil leaves tracing off.
	Tracer Tracer
	// OperatorOf names the authenticated operator of a console request;
	// when it names one, that id is recorded, not the one in the body.
	OperatorOf func(*http.Request) string
	// Corridors are the monitored corridors; DefaultCorridors when nil.
	Corridors []Corridor
	// Comparisons are cited by briefs of severity warn and above in
	// addition to Galesburg.
	Comparisons []Comparison
	// Operator is the on-duty operator paged for approvals.
	Operator string
	// Interval is the live feed's pace between sensor windows.
	Interval time.Duration
	Now      func() time.Time
	NewID    func() string
	Logger   *slog.Logger
}

// System is the pile-up early alert chain: its tools, its console and its
// live corridor feed.
type System struct {
	d Deps
}

// DefaultOperator is the operator paged when Deps names none.
const DefaultOperator = "mdot-ops-A"

// New returns the system with defaults filled in.
func New(d Deps) *System {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.NewID == nil {
		d.NewID = uuid.NewString
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Corridors == nil {
		d.Corridors = DefaultCorridors()
	}
	if d.Operator == "" {
		d.Operator = DefaultOperator
	}
	if d.Interval <= 0 {
		d.Interval = 4 * time.Second
	}
	return &System{d: d}
}

// Attach supplies the stores and the approval service when they are built
// after the system's tools (a gateway needs the tools, and the stores come
// with it). Call it before the gateway serves its first call and before
// Run; it is not safe to call concurrently with them.
func (s *System) Attach(approvals *approval.Service, state custody.StateStore, ledger custody.Ledger, schemas agent.Schemas) {
	s.d.Approvals, s.d.State, s.d.Ledger, s.d.Schemas = approvals, state, ledger, schemas
}

func (s *System) now() time.Time { return s.d.Now().UTC() }

// Tools returns the five tools with their specs: contracts, policy and
// the custody links that make the chain unskippable. With a Tracer each
// call a tool serves is a span of its chain.
func (s *System) Tools() []gate.Tool {
	return []gate.Tool{
		{Spec: detectSpec(), Handler: s.traced(ToolDetect, s.detect)},
		{Spec: briefSpec(), Handler: s.traced(ToolBrief, s.composeBrief)},
		{Spec: approvalSpec(), Handler: s.traced(ToolApprove, s.requestApproval)},
		{Spec: vmsSpec(), Handler: s.traced(ToolVMS, s.issueVMS), Editable: []string{"message"}},
		{Spec: notifySpec(), Handler: s.traced(ToolNotify, s.notifyDriver)},
	}
}

func detectSpec() custody.ToolSpec {
	return custody.ToolSpec{
		Name:        ToolDetect,
		Description: "Evaluate a window of corridor sensor readings against deterministic thresholds and return a pile-up signature (severity, confidence, contributing factors). With severity watch, do not compose a brief.",
		Input:       Ref(0, "input"), Output: Ref(0, "output"),
		Access: custody.Read, Effect: custody.EffectNone, Approval: custody.NotRequired,
		Scope: "corridor", MaxCallsPerTrace: 4,
		Refs: map[string]string{"signature_id": "/signature/signature_id"},
	}
}

func briefSpec() custody.ToolSpec {
	return custody.ToolSpec{
		Name:        ToolBrief,
		Description: "Turn the pile-up signature returned by detect_pileup_signature into a plain-language ops brief for the operator, with the recommended sign and message. Pass the signature exactly as returned.",
		Input:       Ref(1, "input"), Output: Ref(1, "output"),
		Access: custody.Read, Effect: custody.EffectNone, Approval: custody.NotRequired,
		Scope: "corridor", MaxCallsPerTrace: 4,
		Links: []custody.Link{{Arg: "/signature/signature_id", Tool: ToolDetect, Ref: "signature_id"}},
		Refs:  map[string]string{"brief_id": "/brief_id"},
	}
}

func approvalSpec() custody.ToolSpec {
	return custody.ToolSpec{
		Name:        ToolApprove,
		Description: "Page the on-duty operator to approve the brief's recommended sign update. Posts nothing public. The chain waits for the operator's decision.",
		Input:       Ref(2, "input"), Output: Ref(2, "output"),
		Access: custody.Write, Effect: custody.EffectReversible, Approval: custody.NotRequired,
		Scope: "corridor", MaxCallsPerTrace: 2,
		Links: []custody.Link{{Arg: "/brief_id", Tool: ToolBrief, Ref: "brief_id"}},
		Refs:  map[string]string{"approval_request_id": "/approval_request_id"},
	}
}

func vmsSpec() custody.ToolSpec {
	return custody.ToolSpec{
		Name:        ToolVMS,
		Description: "Post the approved message to a variable message sign. Needs the approval_request_id of an operator's approval of exactly this sign, message and duration. Message: at most 80 characters, uppercase A-Z, digits, space and .,!- only.",
		Input:       Ref(3, "input"), Output: Ref(3, "output"),
		Access: custody.Write, Effect: custody.EffectConsequential, Approval: custody.HumanConfirmation,
		Scope: "corridor", MaxCallsPerTrace: 3,
		Links: []custody.Link{{Arg: "/approval_request_id", Approval: true}},
		Refs:  map[string]string{"vms_update_id": "/vms_update_id"},

		// What a public sign says is approved sign by sign, message by
		// message: never by a grant.
		Grants: custody.NoGrants(),
	}
}

func notifySpec() custody.ToolSpec {
	return custody.ToolSpec{
		Name:        ToolNotify,
		Description: "Deliver a short spoken warning to an in-vehicle device, citing the vms_update_id of the sign update posted in this chain. Voice calm unless the operator chose urgent for a critical signature.",
		Input:       Ref(4, "input"), Output: Ref(4, "output"),
		Access: custody.Write, Effect: custody.EffectReversible, Approval: custody.NotRequired,
		Scope: "corridor", MaxCallsPerTrace: 16,
		Links: []custody.Link{{Arg: "/vms_update_id", Tool: ToolVMS, Ref: "vms_update_id"}},
		Refs:  map[string]string{"notification_id": "/notification_id"},
	}
}
