package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/ledger"
)

// policy is step 3: the calls-per-trace budget, the resource scope and the
// custody links. The tool being in the envelope was settled by lookupTool.
func (g *Gateway) policy(ctx context.Context, f *flight) error {
	for _, c := range policyChecks() {
		if err := c.run(g, ctx, f); err != nil {
			return err
		}
	}
	return nil
}

// check is one check of a call before it runs, named by the rule it
// enforces (Decision.Rule).
type check struct {
	rule string
	run  func(g *Gateway, ctx context.Context, f *flight) error
}

// policyChecks are the checks of step 3, in the order they decide. Call
// and Decide both run them from here, so that a replay decides by the
// rules the gateway enforces.
func policyChecks() []check {
	return []check{
		{RuleAdmit, (*Gateway).admit},
		{RuleCondition, (*Gateway).conditions},
		{RuleRate, (*Gateway).rate},
		{RuleBudget, (*Gateway).budget},
		{RuleScope, (*Gateway).scope},
		{RuleLink, (*Gateway).links},
	}
}

// admit asks the tool itself whether it takes calls now: a tool whose
// definition is in quarantine does not.
func (g *Gateway) admit(ctx context.Context, f *flight) error {
	if f.tool.Admit == nil {
		return nil
	}
	err := f.tool.Admit(ctx)
	if err == nil {
		return nil
	}
	if _, ok := err.(*custody.Error); ok {
		return err
	}
	return &custody.Error{Kind: custody.EDENIED, Message: err.Error(), Err: err}
}

// budget refuses a call once its trace has used the tool's calls. Only
// calls that ran count: the count is committed with the call's first
// entry after the policy let it go on (see budgetChange), so that no call
// is counted that the ledger does not show. Refused calls count against
// the refusal budget instead (see refusals).
func (g *Gateway) budget(ctx context.Context, f *flight) error {
	max := f.tool.Spec.MaxCallsPerTrace
	if max <= 0 {
		return nil
	}
	f.budgetKey = f.Trace + "/" + f.Tool
	n, err := g.enforcedCount(ctx, f, nsBudget, f.budgetKey)
	if err != nil {
		return err
	}
	if n >= int64(max) {
		return budgetSpent(f)
	}
	return nil
}

// refusals denies a call once its trace has had the tool's refusal budget
// of refused calls, before the call is looked at any further, so that a
// trace probing the tool's contract or policy is stopped. The budget stops
// the agent's probing, not an operator's decision: a call that an
// operator's approval authorises exactly (see operatorApproved) goes on
// to the steps that check it, budget spent or not. The denial carries a
// violation with keyword maximum_refusals_per_trace, so that a system can
// tell its operator.
//
// A budget of two or more is also checked by the commit of the call's
// first entry that lets it go on (see refusalCheck), so that the count
// here may come from the tally; a budget of one, which a conditional
// increment cannot express, is read from the store.
func (g *Gateway) refusals(ctx context.Context, f *flight) error {
	max := f.tool.maxRefusals
	if max <= 0 {
		f.refusalKey = f.traceKey() // counted for the conditions alone
		return nil
	}
	f.refusalKey = f.Trace + "/" + f.Tool
	count := g.traceCount
	if max >= 2 {
		count = g.enforcedCount
	}
	n, err := count(ctx, f, nsRefusals, f.refusalKey)
	if err != nil {
		return err
	}
	if n < int64(max) {
		// In a trace made for the call no one else can have refused.
		f.refusalCheck = max >= 2 && !f.newTrace
		return nil
	}
	if g.operatorApproved(ctx, f) {
		return nil
	}
	return refusalsSpent(f)
}

// refusalsSpent is the denial of a call in a trace that has had its
// tool's refusal budget.
func refusalsSpent(f *flight) *custody.Error {
	msg := fmt.Sprintf("tool %q may be refused at most %d times per trace (maximum_refusals_per_trace); trace %s has had them, so no more calls of it are taken in this trace, except one an operator's approval authorises", f.Tool, f.tool.maxRefusals, f.Trace)
	return &custody.Error{Kind: custody.EDENIED, Message: msg,
		Violations: []custody.Violation{{Keyword: "maximum_refusals_per_trace", Message: "refusal budget spent"}}}
}

// refusalCheck returns the change that holds a call's first entry that
// lets it go on (call.started, call.succeeded) to its trace's refusal
// budget, and whether there is one: a conditional increment by 0 that
// fails once the count has reached the budget, so that a refusal another
// process counted after the pre-check read its count still stops the
// call.
func refusalCheck(f *flight, kind string) (custody.Change, bool) {
	if !f.refusalCheck || (kind != custody.KindCallStarted && kind != custody.KindCallSucceeded) {
		return custody.Change{}, false
	}
	return custody.IncrState(nsRefusals, f.refusalKey, 0, int64(f.tool.maxRefusals)-1).Else(refusalsSpent(f)), true
}

// operatorApproved reports whether an operator's approval authorises
// exactly this HUMAN_CONFIRMATION call: the approval it cites or, citing
// none, one of its agent's approvals of the same action, approved,
// unexpired, unused, asked by the caller in any trace under the
// definition that would run. It only decides whether the refusal budget
// applies; the approval step checks the approval again.
func (g *Gateway) operatorApproved(ctx context.Context, f *flight) bool {
	if f.tool.Spec.Approval != custody.HumanConfirmation {
		return false
	}
	action, err := withoutMembers(f.Args, f.tool.approvalArgs)
	if err != nil {
		return false
	}
	digest, err := ledger.ActionDigest(f.Tool, action)
	if err != nil {
		return false
	}
	cands, cited := g.citedApprovals(ctx, f)
	if !cited {
		cands, _ = g.approvals.Of(ctx, f.Actor, digest)
	}
	now := g.now()
	for _, a := range cands {
		if a.Tool == f.Tool && a.Requester == f.Actor && a.Definition == f.definition() &&
			approval.Usable(a, digest, now) == nil {
			return true
		}
	}
	return false
}

// citedApprovals returns the approvals the call's approval links name, and
// whether it names any; one that cannot be read is left out.
func (g *Gateway) citedApprovals(ctx context.Context, f *flight) ([]custody.Approval, bool) {
	var out []custody.Approval
	cited := false
	for _, l := range f.tool.Spec.Links {
		raw, ok := lookup(f.Args, l.Arg)
		if !l.Approval || !ok {
			continue
		}
		cited = true
		if id, ok := refValue(raw); ok {
			if a, err := g.approvals.Get(ctx, id); err == nil {
				out = append(out, a)
			}
		}
	}
	return out, cited
}

// traceCount returns a count of f's trace, key: 0 in a trace made for
// f, where nothing has counted yet, else the state store's.
func (g *Gateway) traceCount(ctx context.Context, f *flight, ns, key string) (int64, error) {
	if f.newTrace {
		return 0, nil
	}
	return g.counter(ctx, ns, key)
}

// enforcedCount is traceCount for a counter whose limit the commit
// enforces (a calls budget): there a count in the tally will do.
func (g *Gateway) enforcedCount(ctx context.Context, f *flight, ns, key string) (int64, error) {
	if f.newTrace {
		g.tally.fresh(ns, key)
		return 0, nil
	}
	return g.tallied(ctx, ns, key)
}

// tallied returns a count whose limit the commit enforces: the tally's,
// else the state store's.
func (g *Gateway) tallied(ctx context.Context, ns, key string) (int64, error) {
	n, ok, tk := g.tally.get(ns, key)
	if ok {
		return n, nil
	}
	n, err := g.counter(ctx, ns, key)
	if err == nil {
		g.tally.learn(tk, n)
	}
	return n, err
}

// counter reads a count in the state store; 0 when there is none.
func (g *Gateway) counter(ctx context.Context, ns, key string) (int64, error) {
	doc, err := g.state.State(ctx, ns, key)
	if custody.ErrorKind(err) == custody.ENOTFOUND {
		return 0, nil
	}
	if err != nil {
		return 0, unavailableState(err)
	}
	n, err := strconv.ParseInt(string(doc), 10, 64)
	if err != nil {
		return 0, &custody.Error{Kind: custody.EINTERNAL, Message: "internal error", Err: fmt.Errorf("%s %s: %w", ns, key, err)}
	}
	return n, nil
}

// budgetSpent is the refusal of a call past its trace's budget.
func budgetSpent(f *flight) *custody.Error {
	return custody.Errorf(custody.EDENIED, "tool %q may be called at most %d times per trace (maximum_calls_per_trace); trace %s has used them", f.Tool, f.tool.Spec.MaxCallsPerTrace, f.Trace)
}

// budgetChange returns the change that counts a call that ran, committed
// with its first entry of the given kind other than call.refused, and
// whether there is one. An entry that lets the call go on (call.started,
// call.succeeded) holds only within the budget, so that concurrent calls
// cannot pass it; a failure or breach of a call that ran counts whatever
// the sum.
func budgetChange(f *flight, kind string) (custody.Change, bool) {
	if f.budgetKey == "" || f.budgetCounted || kind == custody.KindCallRefused {
		return custody.Change{}, false
	}
	limit := int64(0)
	if kind == custody.KindCallStarted || kind == custody.KindCallSucceeded {
		limit = int64(f.tool.Spec.MaxCallsPerTrace)
	}
	return custody.IncrState(nsBudget, f.budgetKey, 1, limit).Else(budgetSpent(f)), true
}

// refusalChange returns the change that counts a refused call against its
// tool's refusal budget, committed with its call.refused entry, and
// whether there is one. A refusal that only reports an approval already
// waiting does not count, nor does a failure of custody itself.
func refusalChange(f *flight, kind string, e *custody.Error) (custody.Change, bool) {
	if f.refusalKey == "" || kind != custody.KindCallRefused || e == nil {
		return custody.Change{}, false
	}
	switch {
	case e.Kind == custody.EUNAVAILABLE, e.Kind == custody.EINTERNAL:
		return custody.Change{}, false
	case e.Kind == custody.EPENDING && !f.asked:
		return custody.Change{}, false
	}
	return custody.IncrState(nsRefusals, f.refusalKey, 1, 0), true
}

// scope refuses a call naming a resource bound to another trace, and binds
// a resource no trace has touched to the caller's.
func (g *Gateway) scope(ctx context.Context, f *flight) error {
	v, key, ok, err := scopedResource(f)
	if !ok || err != nil {
		return err
	}
	owner, err := g.bind(ctx, key, f.Trace)
	if err != nil {
		return err
	}
	if owner != f.Trace {
		return scopeRefusal(f, v)
	}
	return nil
}

// scopeRefusal is the refusal of a call naming the resource v, which
// another trace owns.
func scopeRefusal(f *flight, v string) *custody.Error {
	return &custody.Error{Kind: custody.EDENIED,
		Message:    fmt.Sprintf("%s %q belongs to another trace: tool %q may only touch resources of its own trace", f.tool.scopeName, v, f.Tool),
		Violations: []custody.Violation{{Instance: f.tool.scopeArg, Keyword: "resource_scope", Message: "resource bound to another trace"}}}
}

// bind returns the trace that owns the resource key, making trace its
// owner when there is none. The claim counter makes the first claimant
// win across gateways sharing a store; a loser waits briefly for the
// winner's binding to appear.
func (g *Gateway) bind(ctx context.Context, key, trace string) (string, error) {
	if owner, ok, err := g.owner(ctx, key); err != nil || ok {
		return owner, err
	}
	n, err := g.state.IncrState(ctx, nsScopeClaim, key, 1)
	if err != nil {
		return "", unavailableState(err)
	}
	if n == 1 {
		doc, _ := json.Marshal(trace)
		if err := g.state.PutState(ctx, nsScope, key, doc); err != nil {
			return "", unavailableState(err)
		}
		return trace, nil
	}
	for range 50 {
		if owner, ok, err := g.owner(ctx, key); err != nil || ok {
			return owner, err
		}
		select {
		case <-ctx.Done():
			return "", &custody.Error{Kind: custody.EUNAVAILABLE, Message: "the call was cancelled", Err: ctx.Err()}
		case <-time.After(2 * time.Millisecond):
		}
	}
	return "", custody.Errorf(custody.EUNAVAILABLE, "the resource %s is being claimed; try again", key)
}

// owner reads the trace bound to a resource key.
func (g *Gateway) owner(ctx context.Context, key string) (string, bool, error) {
	doc, err := g.state.State(ctx, nsScope, key)
	if custody.ErrorKind(err) == custody.ENOTFOUND {
		return "", false, nil
	}
	if err != nil {
		return "", false, unavailableState(err)
	}
	var owner string
	if err := json.Unmarshal(doc, &owner); err != nil {
		return "", false, &custody.Error{Kind: custody.EINTERNAL, Message: "internal error", Err: fmt.Errorf("scope binding %s: %w", key, err)}
	}
	return owner, true, nil
}

// links checks the custody links: each linked argument must name what an
// earlier successful call of the same trace produced, or an approval.
// Linked values become refs of the call's entries.
func (g *Gateway) links(ctx context.Context, f *flight) error {
	for _, l := range f.tool.Spec.Links {
		var err error
		if l.Approval {
			err = g.approvalLink(ctx, f, l)
		} else {
			err = g.refLink(ctx, f, l)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// refLink checks a link to a ref an earlier successful call of l.Tool (of
// any tool when l.Tool is empty) recorded in the trace: a keyed lookup of
// the state its call.succeeded entry committed (see refChanges).
func (g *Gateway) refLink(ctx context.Context, f *flight, l custody.Link) error {
	v, err := linkValue(f, l)
	if err != nil {
		return err
	}
	_, err = g.state.State(ctx, nsRef, refKey(f.Trace, l.Tool, l.Ref, v))
	if err == nil {
		f.ref(l.Ref, v)
		return nil
	}
	if custody.ErrorKind(err) != custody.ENOTFOUND {
		return unavailableState(fmt.Errorf("custody link %s: %w", l.Arg, err))
	}
	from := "an earlier call"
	if l.Tool != "" {
		from = fmt.Sprintf("an earlier successful %s call", l.Tool)
	}
	return dangling(l.Arg, fmt.Sprintf("dangling custody link: %s %q was not produced by %s in trace %s", l.Ref, v, from, f.Trace))
}

// refKey is the state key of a ref recorded in a trace by a tool ("" for
// any tool): a JSON array, so that no choice of values makes two keys
// alike.
func refKey(trace, tool, ref, value string) string {
	b, _ := json.Marshal([4]string{trace, tool, ref, value})
	return string(b)
}

// linkedRefs returns the refs the custody links of tools check: the ref
// and the tool that must have recorded it, "" for any tool.
func linkedRefs(tools []Tool) map[[2]string]bool {
	out := map[[2]string]bool{}
	for _, t := range tools {
		for _, l := range t.Spec.Links {
			if !l.Approval {
				out[[2]string{l.Tool, l.Ref}] = true
			}
		}
	}
	return out
}

// refChanges returns the state changes that record the refs of a
// successful call for the custody links of later calls: each ref a link
// checks, under the call's tool or under any tool as the links ask. Refs
// no link checks are on the entry alone.
func (g *Gateway) refChanges(f *flight, refs map[string]string) []custody.Change {
	if len(refs) == 0 || len(g.linked) == 0 {
		return nil
	}
	doc := []byte(`true`)
	var out []custody.Change
	for k, v := range refs {
		for _, tool := range [2]string{f.Tool, ""} {
			if g.linked[[2]string{tool, k}] {
				out = append(out, custody.PutState(nsRef, refKey(f.Trace, tool, k, v), doc))
			}
		}
	}
	return out
}

// approvalLink checks an argument naming an approval. For a
// HUMAN_CONFIRMATION tool the approval step decides whether it authorises
// the call; for any other tool it must have been approved.
func (g *Gateway) approvalLink(ctx context.Context, f *flight, l custody.Link) error {
	hc := f.tool.Spec.Approval == custody.HumanConfirmation
	if _, present := lookup(f.Args, l.Arg); !present && hc {
		return nil
	}
	id, err := linkValue(f, l)
	if err != nil {
		return err
	}
	a, err := g.approvals.Get(ctx, id)
	if custody.ErrorKind(err) == custody.ENOTFOUND {
		return dangling(l.Arg, fmt.Sprintf("dangling custody link: there is no approval %q", id))
	}
	if err != nil {
		return err
	}
	f.ref(approval.RefApproval, id)
	if hc {
		f.named = id
		return nil
	}
	if err := sameTrace(a, f); err != nil {
		return err
	}
	if err := sameRequester(a, f); err != nil {
		return err
	}
	return approvedLink(a, g.now())
}

// sameTrace refuses a custody link to an approval requested in another
// trace: a link threads one chain of custody. (An approval that
// authorises a HUMAN_CONFIRMATION call serves any trace of its agent.)
func sameTrace(a custody.Approval, f *flight) error {
	if a.Trace == f.Trace {
		return nil
	}
	return &custody.Error{Kind: custody.EDENIED, ApprovalRequestID: a.ID,
		Message: fmt.Sprintf("approval %s belongs to another trace", a.ID)}
}

// approvedLink accepts an approval a non-confirmed tool cites: one that an
// operator approved and that was used, or is still usable.
func approvedLink(a custody.Approval, now time.Time) error {
	if a.Status == custody.ApprovalConsumed || a.Status == custody.ApprovalApproved && now.Before(a.ExpiresAt) {
		return nil
	}
	return approval.Usable(a, a.Digest, now)
}

// linkValue returns the value of a linked argument as a ref value.
func linkValue(f *flight, l custody.Link) (string, error) {
	raw, ok := lookup(f.Args, l.Arg)
	if !ok {
		return "", dangling(l.Arg, fmt.Sprintf("custody link: the argument %s is missing", l.Arg))
	}
	v, ok := refValue(raw)
	if !ok {
		return "", dangling(l.Arg, fmt.Sprintf("custody link: the argument %s must be a string or a number", l.Arg))
	}
	return v, nil
}

// dangling returns the EDENIED error of a custody link that does not hold.
func dangling(arg, msg string) *custody.Error {
	return &custody.Error{Kind: custody.EDENIED, Message: msg,
		Violations: []custody.Violation{{Instance: arg, Keyword: "links", Message: msg}}}
}

// ref adds a ref to the call's next entries.
func (f *flight) ref(k, v string) {
	switch {
	case f.refs == nil:
		f.refs = make(map[string]string, 2)
	case f.refsShared:
		if f.refs[k] == v {
			return
		}
		f.refs = maps.Clone(f.refs)
		f.refsShared = false
	}
	f.refs[k] = v
}

// entryRefs returns the refs for the call's next entry, which shares them
// from then on.
func (f *flight) entryRefs() map[string]string {
	f.refsShared = f.refs != nil
	return f.refs
}

// unavailableState is the error a caller sees when the state store fails.
func unavailableState(err error) *custody.Error {
	return &custody.Error{Kind: custody.EUNAVAILABLE, Message: "state store unavailable", Err: err}
}
