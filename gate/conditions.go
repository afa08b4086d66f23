package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/condition"
)

// rules are a tool's compiled conditions, in the order they are decided:
// every denyWhen, then every allowWhen, then every approveWhen.
type rules struct {
	env   *condition.Env
	conds []rule
	// trace says a condition reads the trace's counts, which are then
	// kept for the tool whatever its budgets.
	trace bool
	// annotations are the tool's MCP annotations, as its server declared
	// them.
	annotations map[string]any
}

// rule is one compiled condition.
type rule struct {
	custody.Condition
	x *condition.Expr
}

// whenOrder is the order in which the kinds of condition decide.
var whenOrder = []custody.When{custody.DenyWhen, custody.AllowWhen, custody.ApproveWhen}

// compileRules compiles the tool's conditions against its input schema
// and checks its rate limits. A tool with either records a call.started
// entry before it runs: a rate counts the calls that ran, with that
// entry, and a held call uses its approval with it.
func (g *Gateway) compileRules(ct *tool) error {
	s := ct.Spec
	if err := checkRates(s.Rates); err != nil {
		return err
	}
	if len(s.Rates) > 0 {
		ct.intent = true
	}
	if len(s.Conditions) == 0 {
		return nil
	}
	input, err := g.reg.Bundle(s.Input)
	if err != nil {
		return fmt.Errorf("schema %q: %w", s.Input, err)
	}
	r := &rules{}
	if r.env, err = condition.NewEnv(input); err != nil {
		return err
	}
	for _, when := range whenOrder {
		for _, c := range s.Conditions {
			if c.When != when {
				continue
			}
			x, err := r.env.Compile(c.Expr)
			if err != nil {
				return fmt.Errorf("%s: %w", c.Where(), err)
			}
			r.conds = append(r.conds, rule{Condition: c, x: x})
			r.trace = r.trace || x.UsesTrace()
			ct.intent = ct.intent || when == custody.ApproveWhen
		}
	}
	if len(r.conds) != len(s.Conditions) {
		return fmt.Errorf("a condition's when must be %q, %q or %q", custody.DenyWhen, custody.AllowWhen, custody.ApproveWhen)
	}
	if r.trace && g.state == nil {
		return errors.New("a condition over the trace's counts needs a state store")
	}
	r.annotations = annotationsOf(ct.Published)
	ct.rules = r
	return nil
}

// annotationsOf returns the annotations of a tool an MCP server declared;
// nil for any other.
func annotationsOf(p *Published) map[string]any {
	if p == nil || p.Declared == nil {
		return nil
	}
	var d struct {
		Annotations map[string]any `json:"annotations"`
	}
	if json.Unmarshal(p.Declared, &d) != nil {
		return nil
	}
	return d.Annotations
}

// traceKey is the key of the tool's trace counts for a call when a
// condition reads them; "" otherwise.
func (f *flight) traceKey() string {
	if f.tool.rules == nil || !f.tool.rules.trace {
		return ""
	}
	return f.Trace + "/" + f.Tool
}

// conditions decides the tool's conditions over the call: a denyWhen
// that is true or an allowWhen that is false denies it; an approveWhen
// that is true holds it for a human's approval at the approval step. A
// condition that cannot be evaluated denies the call (fail closed). Each
// refusal names the condition that decided it, in its message and as a
// violation, so that its call.refused entry records it.
func (g *Gateway) conditions(ctx context.Context, f *flight) error {
	r := f.tool.rules
	if r == nil {
		return nil
	}
	act, err := g.activation(ctx, f, r)
	if err != nil {
		return err
	}
	for i := range r.conds {
		c := &r.conds[i]
		v, err := c.x.Eval(act)
		switch {
		case err != nil:
			return conditionRefusal(f, c, fmt.Sprintf("tool %q is denied: its condition %s %s could not be evaluated (%v), and a condition that fails refuses the call", f.Tool, c.When, c.Expr, err))
		case c.When == custody.DenyWhen && v:
			return conditionRefusal(f, c, fmt.Sprintf("tool %q is denied by its policy: %s %s is true", f.Tool, c.When, c.Expr))
		case c.When == custody.AllowWhen && !v:
			return conditionRefusal(f, c, fmt.Sprintf("tool %q is denied by its policy: %s %s is false", f.Tool, c.When, c.Expr))
		case c.When == custody.ApproveWhen && v && f.held == nil:
			f.held = &c.Condition
		}
	}
	return nil
}

// activation builds the variables of the call's conditions, reading the
// trace's counts when a condition needs them.
func (g *Gateway) activation(ctx context.Context, f *flight, r *rules) (*condition.Activation, error) {
	c := condition.Call{Args: f.Args, Agent: f.Actor, Tool: f.Tool, Trace: f.Trace, Now: g.now(),
		Upstream: f.refs["upstream"], Annotations: r.annotations}
	if g.groups != nil {
		c.Groups = g.groups(f.Actor)
	}
	if key := f.traceKey(); key != "" {
		// The same counts as the budgets: committed with the entries.
		f.budgetKey = key
		var err error
		if c.Calls, err = g.traceCount(ctx, f, nsBudget, key); err != nil {
			return nil, err
		}
		if c.Refusals, err = g.traceCount(ctx, f, nsRefusals, key); err != nil {
			return nil, err
		}
	}
	act, err := r.env.Activation(c)
	if err != nil {
		return act, invalid("", "arguments must be a JSON object")
	}
	return act, nil
}

// conditionRefusal is the denial of a call by condition c.
func conditionRefusal(f *flight, c *rule, msg string) *custody.Error {
	return &custody.Error{Kind: custody.EDENIED, Message: msg,
		Violations: []custody.Violation{{Keyword: c.Where(), Message: string(c.When) + ": " + c.Expr}}}
}

// explainHold adds to the refusal of a call an approveWhen held (pending
// or expired approval) the condition that held it.
func (f *flight) explainHold(err error) error {
	var ce *custody.Error
	if f.held == nil || !errors.As(err, &ce) || (ce.Kind != custody.EPENDING && ce.Kind != custody.EEXPIRED) {
		return err
	}
	out := *ce
	out.Message = fmt.Sprintf("%s (held by its policy: %s %s is true)", ce.Message, f.held.When, f.held.Expr)
	out.Violations = append(slices.Clone(ce.Violations), custody.Violation{Keyword: f.held.Where(), Message: string(f.held.When) + ": " + f.held.Expr})
	return &out
}
