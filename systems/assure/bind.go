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
	for _, x := range env.Injections {
		for _, tool := range injectionTools(x.Category) {
			if bound[tool] {
				bad = append(bad, fmt.Sprintf("%s (%s) acts on %s", x.InjectionID, x.Category, tool))
			}
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return custody.Errorf(custody.EINVALID, "failure injections act on tools bound upstream, where the harness cannot inject them: %s; remove the injections or leave those tools to the synthetic world", strings.Join(bad, "; "))
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
