package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/condition"
	"github.com/custody-dev/custody/upstream"
)

// Exprs is one CEL expression or a list of them, as a condition of a
// policy is written: "args.amount > 100" or ["...", "..."].
type Exprs []string

// UnmarshalJSON reads a string or an array of strings.
func (e *Exprs) UnmarshalJSON(b []byte) error {
	if b = bytes.TrimSpace(b); len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*e = Exprs{s}
		return nil
	}
	return json.Unmarshal(b, (*[]string)(e))
}

// Rate is one rate limit of a policy: calls that may run every window,
// counted per agent, tool, trace or for every tool the key governs
// (global).
type Rate struct {
	Per   custody.RatePer `json:"per"`
	Calls int             `json:"calls"`
	Every string          `json:"every"`
}

// Rates is one rate limit or a list of them.
type Rates []Rate

// UnmarshalJSON reads an object or an array of objects.
func (r *Rates) UnmarshalJSON(b []byte) error {
	if b = bytes.TrimSpace(b); len(b) > 0 && b[0] == '{' {
		var one Rate
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		*r = Rates{one}
		return nil
	}
	return json.Unmarshal(b, (*[]Rate)(r))
}

// conditionsOf returns a policy's conditions, each with the path it was
// written at.
func (p Policy) conditionsOf(key string) []custody.Condition {
	var out []custody.Condition
	for _, w := range []struct {
		when  custody.When
		exprs Exprs
	}{{custody.DenyWhen, p.DenyWhen}, {custody.ApproveWhen, p.ApproveWhen}, {custody.AllowWhen, p.AllowWhen}} {
		for i, x := range w.exprs {
			src := "/tools/" + escape(key) + "/" + string(w.when)
			if len(w.exprs) > 1 {
				src = fmt.Sprintf("%s/%d", src, i)
			}
			out = append(out, custody.Condition{When: w.when, Expr: x, Source: src})
		}
	}
	return out
}

// ratesOf returns a policy's rate limits, which checkRules has checked.
func (p Policy) ratesOf(key string) []custody.Rate {
	var out []custody.Rate
	for _, r := range p.Rate {
		every, _ := time.ParseDuration(r.Every)
		out = append(out, custody.Rate{Per: r.Per, Calls: r.Calls, Every: every, Pool: key})
	}
	return out
}

// checkRules compiles a policy's conditions with untyped arguments: a
// syntax error, an unknown variable or a condition that is no bool fails
// the load, naming its path. Against the tool's input schema, which only
// its upstream declares, they are checked again when the upstreams list
// their tools (config check, serve). Every window must parse.
func (p Policy) checkRules(key string) error {
	conds := p.conditionsOf(key)
	if len(conds) > 0 {
		env, err := condition.NewEnv(nil)
		if err != nil {
			return err
		}
		for _, c := range conds {
			if _, err := env.Compile(c.Expr); err != nil {
				return fmt.Errorf("%s: %v", c.Source, err)
			}
		}
	}
	for i, r := range p.Rate {
		if d, err := time.ParseDuration(r.Every); err != nil || d < time.Second {
			return fmt.Errorf("/tools/%s/rate/%d/every: %q is not a duration of a second or more", escape(key), i, r.Every)
		}
	}
	return nil
}

// withRules adds a policy's conditions and rate limits, declared under
// key, to its upstream policy.
func withRules(up upstream.Policy, p Policy, key string) upstream.Policy {
	up.Conditions, up.Rates = p.conditionsOf(key), p.ratesOf(key)
	return up
}
