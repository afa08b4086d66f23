package gate

import (
	"context"
	"fmt"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
)

// Verdict is what a gateway's policy makes of a call before it runs.
type Verdict string

// Verdicts of Decide.
const (
	// Allowed: the call would run.
	Allowed Verdict = "allowed"
	// Denied: the call would be refused.
	Denied Verdict = "denied"
	// Held: the call would wait for a human's approval.
	Held Verdict = "held"
)

// Rules name the check that decided a call (Decision.Rule), in the order
// the gateway runs them.
const (
	RuleTrace       = "trace"       // the call's bytes or its trace id
	RuleEnvelope    = "envelope"    // the tool is not governed, or not for this agent
	RuleRefusals    = "refusals"    // the trace used the tool's refusal budget
	RuleContract    = "contract"    // the arguments break the tool's input schema
	RuleArguments   = "arguments"   // the arguments break the policy's narrowing
	RuleAdmit       = "admit"       // the tool itself refuses calls now
	RuleCondition   = "condition"   // a denyWhen or allowWhen condition
	RuleRate        = "rate"        // a rate limit
	RuleBudget      = "budget"      // the calls-per-trace budget
	RuleScope       = "scope"       // a resource bound to another trace
	RuleLink        = "link"        // a custody link
	RuleApproval    = "approval"    // the tool's approval policy
	RuleApproveWhen = "approveWhen" // an approveWhen condition
)

// Decision is what the gateway's policy decides of one call, without
// running it or writing anything.
type Decision struct {
	Verdict Verdict
	// Rule is the check that denied or held the call; "" when allowed.
	Rule string
	// Where names the condition that decided (its Source, else its
	// when) for RuleCondition and RuleApproveWhen.
	Where string
	// Message is the refusal the agent would see; "" when allowed.
	Message string
	// Digest is the action digest of a held call.
	Digest string
	// Unchecked names the rules that applied to the call but that Decide
	// did not check: RuleLink when the tool has custody links. A verdict
	// other than Denied is then what the other rules decide.
	Unchecked []string
	// Changes are the state changes the gateway commits with the call's
	// first entry under this decision (its counts against budgets and
	// rate limits), for a replay to apply to the state it keeps.
	Changes []custody.Change
}

// Decide decides call c as Call would at the gateway's clock, reading the
// gateway's state store, without running the tool, asking for an
// approval or appending to the ledger. It runs the checks Call runs
// (validateChecks, policyChecks) but the custody links, which name what
// earlier calls returned: a replay produces no outputs (Decision.Unchecked
// says when a tool has links). A call the policy
// lets go on that needs a human's approval (its tool's approval policy,
// or an approveWhen) is Held, whatever approvals exist. waiting, when not
// nil, reports whether an approval of the action is already waiting for
// the agent; a live gateway then reports it and does not count the
// refusal. The error is a failure of the state store alone.
//
// A tool with a resource scope binds the resource in the state store, as
// Call does.
func (g *Gateway) Decide(ctx context.Context, c custody.Call, waiting func(actor, digest string) bool) (Decision, error) {
	f := &flight{Call: c, start: g.now()}
	checks := append(validateChecks(), policyChecks()...)
	var unchecked []string
	for _, ch := range checks {
		if ch.rule == RuleLink {
			if len(f.tool.Spec.Links) > 0 {
				unchecked = append(unchecked, RuleLink)
			}
			continue
		}
		if err := ch.run(g, ctx, f); err != nil {
			d, err := g.decideRefused(f, ch.rule, err)
			d.Unchecked = unchecked
			return d, err
		}
	}
	if f.tool.Spec.Approval == custody.HumanConfirmation || f.held != nil {
		d, err := g.decideHeld(f, waiting)
		d.Unchecked = unchecked
		return d, err
	}
	kind := custody.KindCallSucceeded
	if f.tool.intent {
		kind = custody.KindCallStarted
	}
	return Decision{Verdict: Allowed, Changes: g.changes(f, kind), Unchecked: unchecked}, nil
}

// decideRefused is the decision of a call a check refused with err.
func (g *Gateway) decideRefused(f *flight, rule string, err error) (Decision, error) {
	ce := custody.AsError(err)
	if ce.Kind == custody.EUNAVAILABLE || ce.Kind == custody.EINTERNAL {
		return Decision{}, fmt.Errorf("decide %s: %w", rule, err)
	}
	d := Decision{Verdict: Denied, Rule: rule, Message: ce.Message}
	if rule == RuleCondition && len(ce.Violations) > 0 {
		d.Where = ce.Violations[0].Keyword
	}
	if f.tool != nil {
		f.refusal = ce
		d.Changes = g.changes(f, custody.KindCallRefused)
	}
	return d, nil
}

// decideHeld is the decision of a call that waits for an approval: its
// refusal counts as Call's does, once per action asked.
func (g *Gateway) decideHeld(f *flight, waiting func(actor, digest string) bool) (Decision, error) {
	d := Decision{Verdict: Held, Rule: RuleApproval}
	if f.held != nil {
		d.Rule, d.Where = RuleApproveWhen, f.held.Where()
	}
	action, err := withoutMembers(f.Args, f.tool.approvalArgs)
	if err == nil {
		d.Digest, err = ledger.ActionDigest(f.Tool, action)
	}
	if err != nil {
		return g.decideRefused(f, RuleContract, invalid("", "arguments must be a canonical JSON object"))
	}
	f.asked = waiting == nil || !waiting(f.Actor, d.Digest)
	f.refusal = &custody.Error{Kind: custody.EPENDING, Message: fmt.Sprintf("tool %q needs a human approval", f.Tool)}
	d.Message = f.refusal.Message
	d.Changes = g.changes(f, custody.KindCallRefused)
	return d, nil
}
