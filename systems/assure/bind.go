package assure

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/upstream"
)

// runRegistry loads the contracts of a run: LoadRegistry's and, with
// upstreams, the contracts of their tools.
func runRegistry(up *upstream.Set) (*contract.Registry, error) {
	var extra map[string][]byte
	if up != nil {
		var err error
		if extra, err = up.Contracts(); err != nil {
			return nil, custody.Errorf(custody.EINVALID, "upstream tool contracts: %v", err)
		}
	}
	reg, err := LoadRegistry(extra)
	if err != nil {
		return nil, fmt.Errorf("load contracts: %w", err)
	}
	return reg, nil
}

// implementations returns the implementation of every tool the envelope
// declares: an upstream tool of the same name when up offers one, else the
// synthetic world's. A declared tool with neither is left out, so that
// gate.Bind names it. An injection acting on a tool bound upstream is
// refused: the harness injects failures into its own tools only.
func (r *runner) implementations(ctx context.Context, up *upstream.Set, env Envelope, db Store, svc *approval.Service) (map[string]gate.Tool, error) {
	declared := declaredTools(env)
	out := map[string]gate.Tool{}
	for name, t := range tools(r.worlds) {
		if declared[name] {
			out[name] = t
		}
	}
	if up == nil {
		return out, nil
	}
	ups, err := up.Tools(ctx, upstream.NewPins(db, db, svc))
	if err != nil {
		return nil, custody.Errorf(custody.EUNAVAILABLE, "upstream tools: %v", err)
	}
	bound := map[string]bool{}
	for _, t := range ups {
		if declared[t.Spec.Name] {
			t.Handler = r.worlds.guard(t.Spec.Name, t.Handler)
			out[t.Spec.Name] = t
			bound[t.Spec.Name] = true
		}
	}
	if err := boundInjections(env, bound); err != nil {
		return nil, err
	}
	return out, nil
}

// boundInjections refuses injections that act on upstream-bound tools.
func boundInjections(env Envelope, bound map[string]bool) error {
	var bad []string
	for _, x := range injectedBound(env, bound) {
		bad = append(bad, x.what)
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return custody.Errorf(custody.EINVALID, "failure injections act on tools bound upstream, where the harness cannot inject them: %s; remove the injections or leave those tools to the synthetic world", strings.Join(bad, "; "))
}

// injectionOnBound is an injection acting on a tool bound upstream.
type injectionOnBound struct {
	index int
	what  string
}

// injectedBound returns the injections of env that act on a bound tool:
// the one rule run and lint both apply.
func injectedBound(env Envelope, bound map[string]bool) []injectionOnBound {
	var out []injectionOnBound
	for i, x := range env.Injections {
		for _, tool := range injectionTools(x.Category) {
			if bound[tool] {
				out = append(out, injectionOnBound{i, fmt.Sprintf("%s (%s) acts on %s", x.InjectionID, x.Category, tool)})
			}
		}
	}
	return out
}

// syntheticTools returns the names of the synthetic ward tools.
func syntheticTools() map[string]bool {
	out := map[string]bool{}
	for _, d := range toolDefs() {
		out[d.name] = true
	}
	return out
}

// BoundTools returns the names of the tools a configuration's upstreams
// govern: the tools an envelope may bind (nil for no configuration).
func BoundTools(up *upstream.Set) map[string]bool {
	if up == nil {
		return nil
	}
	out := map[string]bool{}
	for _, o := range up.Offers() {
		if o.Key != "" {
			out[o.Exposed] = true
		}
	}
	return out
}

// BindingProblems names what 'assure run' refuses about how the
// envelope's tools are implemented, given the tools a configuration binds
// (BoundTools): a declared tool that is neither a synthetic ward tool nor
// bound, and an injection acting on a bound tool. configured says whether
// bound is the configuration the run will use; without it the problems
// are worded as what to check, for a warning.
func BindingProblems(env Envelope, bound map[string]bool, configured bool) []Problem {
	synthetic := syntheticTools()
	var ps []Problem
	for i, t := range env.Tools {
		if synthetic[t.ToolID] || bound[t.ToolID] {
			continue
		}
		msg := fmt.Sprintf("no implementation: it is not a synthetic ward tool and the configuration binds no upstream tool named %s, so 'assure run' refuses the envelope (declares tools without an implementation): bind it in the configuration or remove it", t.ToolID)
		if !configured {
			msg = fmt.Sprintf("not a synthetic ward tool: 'assure run' refuses the envelope (declares tools without an implementation) unless its --config binds an upstream tool named %s; give lint that --config to check, or remove the tool", t.ToolID)
		}
		ps = append(ps, Problem{fmt.Sprintf("tools[%d] (%s)", i, t.ToolID), msg})
	}
	for _, x := range injectedBound(env, bound) {
		ps = append(ps, Problem{fmt.Sprintf("failure_injections[%d] (%s)", x.index, env.Injections[x.index].InjectionID),
			x.what + ", which is bound upstream where the harness cannot inject failures: 'assure run' refuses it; remove the injection or leave the tool to the synthetic world"})
	}
	return ps
}

// guard wraps an upstream tool's handler with the synthetic session and
// the data policy: a call of a trace without a session is refused, and an
// output holding identifiable data is withheld and stops the trace.
func (ws *Worlds) guard(name string, h gate.Handler) gate.Handler {
	return func(ctx context.Context, c custody.Call) (json.RawMessage, error) {
		w, err := ws.get(c.Trace)
		if err != nil {
			return nil, err
		}
		out, err := h(ctx, c)
		if err != nil {
			return nil, err
		}
		if hits := ws.scanner.Scan(string(out)); len(hits) > 0 {
			w.stop(hits)
			return nil, custody.Errorf(custody.EUNAVAILABLE, "%s: output withheld by the data policy (identifiable data)", name)
		}
		return out, nil
	}
}

// noGrants forbids grants for every CONSEQUENTIAL tool the envelope
// declares: a clinician confirms each such order once, never a class of
// them.
func noGrants(tools []gate.Tool) {
	for i := range tools {
		if tools[i].Spec.Effect == custody.EffectConsequential {
			tools[i].Spec.Grants = custody.NoGrants()
		}
	}
}
