package condition_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody/condition"
)

const schema = `{
  "type": "object", "additionalProperties": false, "required": ["path"],
  "properties": {
    "path": {"type": "string"},
    "amount": {"type": "number"},
    "count": {"type": "integer"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "meta": {"$ref": "#/$defs/meta"},
    "free": {"type": "object"}
  },
  "$defs": {"meta": {"type": "object", "additionalProperties": false, "properties": {"owner": {"type": "string"}}}}
}`

func env(t testing.TB) *condition.Env {
	t.Helper()
	e, err := condition.NewEnv(json.RawMessage(schema))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestCompile: a condition is type-checked against the input schema.
func TestCompile(t *testing.T) {
	e := env(t)
	for _, tc := range []struct {
		name, src, err string
	}{
		{"OK", `args.amount > 100 || !args.path.startsWith('notes/')`, ""},
		{"OKInteger", `args.count + 1 > 2`, ""},
		{"OKNested", `has(args.meta) && args.meta.owner == agent.id`, ""},
		{"OKFreeObject", `args.free.anything == 1`, ""},
		{"OKList", `'x' in args.tags && size(args.tags) < 3`, ""},
		{"OKTrace", `trace.calls >= 3 && trace.refusals < 2`, ""},
		{"OKTime", `now.getHours() >= 18 && 'ops' in agent.groups && tool.name != ''`, ""},
		{"ErrUnknownField", `args.amout > 100`, "undefined field 'amout'"},
		{"ErrUnknownNested", `args.meta.owners == ''`, "undefined field 'owners'"},
		{"ErrWrongType", `args.path > 100`, "no matching overload"},
		{"ErrWrongTypeMethod", `args.amount.startsWith('x')`, "no matching overload"},
		{"ErrNotBool", `args.amount + 1.0`, "a condition must be a bool"},
		{"ErrSyntax", `args.amount >`, "Syntax error"},
		{"ErrUnknownVariable", `user.id == 'x'`, "undeclared reference"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Compile(tc.src)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("Compile(%q): %v", tc.src, err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("Compile(%q) = %v, want an error with %q", tc.src, err, tc.err)
			}
		})
	}
}

// TestEval evaluates conditions over each variable.
func TestEval(t *testing.T) {
	e := env(t)
	at := time.Date(2026, 3, 1, 19, 30, 0, 0, time.UTC)
	call := condition.Call{Args: json.RawMessage(`{"path":"notes/a","amount":150,"count":2,"tags":["x"],"meta":{"owner":"ann"}}`),
		Agent: "ann", Groups: []string{"ops"}, Tool: "fs__write_file", Upstream: "fs", Trace: "t1", Calls: 3, Refusals: 1, Now: at}
	a, err := e.Activation(call)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		src  string
		want bool
		err  string
	}{
		{`args.amount > 100`, true, ""},
		{`args.amount * 2.0 == 300.0`, true, ""},
		{`args.count + 1 == 3`, true, ""},
		{`args.path.startsWith('notes/')`, true, ""},
		{`args.meta.owner == agent.id`, true, ""},
		{`'ops' in agent.groups`, true, ""},
		{`trace.calls == 3 && trace.refusals == 1 && trace.id == 't1'`, true, ""},
		{`now.getHours() == 19 && now > timestamp('2026-03-01T00:00:00Z')`, true, ""},
		{`tool.name == 'fs__write_file' && tool.upstream == 'fs'`, true, ""},
		{`has(args.free)`, false, ""},
		{`args.free.x == 1`, false, "no such key"},
		{`args.tags.all(t, t.size() < 5)`, true, ""},
	} {
		x, err := e.Compile(tc.src)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tc.src, err)
		}
		got, err := x.Eval(a)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Eval(%q) = %v, %v; want an error with %q", tc.src, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Eval(%q) = %v, %v; want %v", tc.src, got, err, tc.want)
		}
	}
}

// TestCostLimit: an expression that works too hard fails.
func TestCostLimit(t *testing.T) {
	e := env(t)
	x, err := e.Compile(`[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(f, a+b+c+d+f > 0)))))`)
	if err != nil {
		t.Fatal(err)
	}
	a, err := e.Activation(condition.Call{Args: json.RawMessage(`{"path":"p"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Eval(a); err == nil || !strings.Contains(err.Error(), "cost") {
		t.Fatalf("Eval = %v, want the cost limit's error", err)
	}
}

// TestUntypedArgs: without a schema args is a map of any values.
func TestUntypedArgs(t *testing.T) {
	e, err := condition.NewEnv(nil)
	if err != nil {
		t.Fatal(err)
	}
	x, err := e.Compile(`args.anything > 1`)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := e.Activation(condition.Call{Args: json.RawMessage(`{"anything":2}`)})
	if ok, err := x.Eval(a); !ok || err != nil {
		t.Fatalf("Eval = %v, %v", ok, err)
	}
}
