// Package condition compiles and evaluates the CEL conditions of a tool's
// policy (custody.Condition). A condition sees five variables:
//
//	args   the call's arguments, typed by the tool's input schema where
//	       it declares types (a closed object's fields, string, integer,
//	       number, boolean, array); dyn elsewhere
//	agent  {id, groups}: the calling agent and its groups when known
//	tool   {name, upstream, annotations}: the called tool
//	trace  {id, calls, refusals}: the calls of the tool that ran in the
//	       trace so far, and its refused calls
//	now    the gateway's clock, a timestamp
//
// Conditions are type-checked when they are compiled, against the
// schema: a field the schema does not declare, or one used as the wrong
// type, is an error. Each must be a bool. Evaluation is bounded by
// CostLimit; an argument the schema leaves optional is absent from args
// when the call omits it (test it with has(args.x)). The package is pure:
// no I/O.
package condition

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"
)

// CostLimit bounds the cost of one evaluation, in CEL's cost units
// (about one per operation and per element a macro visits): far above a
// policy's comparisons, far below a loop over a large argument.
const CostLimit = 100000

// Variable names.
const (
	VarArgs  = "args"
	VarAgent = "agent"
	VarTool  = "tool"
	VarTrace = "trace"
	VarNow   = "now"
)

// Env compiles the conditions of one tool, against its input schema.
type Env struct {
	env  *cel.Env
	args *shape
}

// NewEnv returns the environment of a tool whose input schema is input
// (a standalone JSON Schema document: its references local to it). A nil
// input types args as a map of any values.
func NewEnv(input json.RawMessage) (*Env, error) {
	args := &shape{kind: dict}
	if len(input) > 0 {
		var root any
		dec := json.NewDecoder(bytes.NewReader(input))
		dec.UseNumber()
		if err := dec.Decode(&root); err != nil {
			return nil, fmt.Errorf("input schema: %w", err)
		}
		if args = shapeOf(root, root, "custody.Args", 0); args.kind != object {
			args = &shape{kind: dict}
		}
	}
	structs := map[string]*shape{}
	args.structs(structs)
	for _, s := range builtins {
		s.structs(structs)
	}
	base, err := types.NewRegistry()
	if err != nil {
		return nil, err
	}
	env, err := cel.NewEnv(
		cel.CustomTypeProvider(&provider{Registry: base, structs: structs}),
		cel.CrossTypeNumericComparisons(true),
		ext.Strings(),
		cel.Variable(VarArgs, args.celType()),
		cel.Variable(VarAgent, builtins[VarAgent].celType()),
		cel.Variable(VarTool, builtins[VarTool].celType()),
		cel.Variable(VarTrace, builtins[VarTrace].celType()),
		cel.Variable(VarNow, cel.TimestampType),
	)
	if err != nil {
		return nil, err
	}
	return &Env{env: env, args: args}, nil
}

// builtins are the shapes of the variables besides args.
var builtins = map[string]*shape{
	VarAgent: {kind: object, name: "custody.Agent", fields: map[string]*shape{
		"id": {kind: str}, "groups": {kind: list, items: &shape{kind: str}}}},
	VarTool: {kind: object, name: "custody.Tool", fields: map[string]*shape{
		"name": {kind: str}, "upstream": {kind: str}, "annotations": {kind: dict}}},
	VarTrace: {kind: object, name: "custody.Trace", fields: map[string]*shape{
		"id": {kind: str}, "calls": {kind: integer}, "refusals": {kind: integer}}},
}

// Expr is a compiled condition.
type Expr struct {
	// Src is the expression as written.
	Src   string
	prg   cel.Program
	trace bool
}

// Compile parses and type-checks src, which must be a bool expression.
// The error names where in src it is wrong, on one line.
func (e *Env) Compile(src string) (*Expr, error) {
	ast, iss := e.env.Compile(src)
	if iss != nil && iss.Err() != nil {
		return nil, issuesError(iss.Errors())
	}
	if !ast.OutputType().IsExactType(cel.BoolType) {
		return nil, fmt.Errorf("%q is a %s expression: a condition must be a bool", src, ast.OutputType())
	}
	prg, err := e.env.Program(ast, cel.CostLimit(CostLimit), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, err
	}
	x := &Expr{Src: src, prg: prg}
	for _, r := range ast.NativeRep().ReferenceMap() {
		x.trace = x.trace || r.Name == VarTrace
	}
	return x, nil
}

// issuesError joins a compile's errors on one line.
func issuesError(errs []*cel.Error) error {
	parts := make([]string, len(errs))
	for i, e := range errs {
		parts[i] = fmt.Sprintf("%d:%d: %s", e.Location.Line(), e.Location.Column()+1, e.Message)
	}
	return errors.New(strings.Join(parts, "; "))
}

// UsesTrace reports whether the condition reads the trace variable: only
// then need its counts be read.
func (x *Expr) UsesTrace() bool { return x.trace }

// Call is what a condition is evaluated over.
type Call struct {
	// Args are the arguments, a JSON object that passed the input
	// contract.
	Args        json.RawMessage
	Agent       string
	Groups      []string
	Tool        string
	Upstream    string
	Annotations map[string]any
	Trace       string
	// Calls and Refusals are the trace's calls of the tool that ran and
	// its refused ones so far.
	Calls, Refusals int64
	Now             time.Time
}

// Activation is a call's variables, built once for all of its tool's
// conditions and each made a CEL value only when a condition reads it.
// It is not safe for concurrent use: each call has its own.
type Activation struct {
	call Call
	args map[string]any
	vals [5]ref.Val
}

// Activation returns the variables of c. Arguments that are not a JSON
// object are an error.
func (e *Env) Activation(c Call) (*Activation, error) {
	var args map[string]any
	dec := json.NewDecoder(bytes.NewReader(c.Args))
	dec.UseNumber()
	if err := dec.Decode(&args); err != nil || args == nil {
		return nil, errors.New("the arguments are not a JSON object")
	}
	e.args.value(args)
	return &Activation{call: c, args: args}, nil
}

// varIndex numbers the variables for Activation.vals.
var varIndex = map[string]int{VarArgs: 0, VarAgent: 1, VarTool: 2, VarTrace: 3, VarNow: 4}

// ResolveName implements interpreter.Activation.
func (a *Activation) ResolveName(name string) (any, bool) {
	i, ok := varIndex[name]
	if !ok {
		return nil, false
	}
	if a.vals[i] == nil {
		a.vals[i] = types.DefaultTypeAdapter.NativeToValue(a.native(name))
	}
	return a.vals[i], true
}

// Parent implements interpreter.Activation: there is none.
func (a *Activation) Parent() interpreter.Activation { return nil }

// native is the Go value of the variable name.
func (a *Activation) native(name string) any {
	c := a.call
	switch name {
	case VarArgs:
		return a.args
	case VarAgent:
		return map[string]any{"id": c.Agent, "groups": orEmpty(c.Groups)}
	case VarTool:
		annotations := c.Annotations
		if annotations == nil {
			annotations = map[string]any{}
		}
		return map[string]any{"name": c.Tool, "upstream": c.Upstream, "annotations": annotations}
	case VarTrace:
		return map[string]any{"id": c.Trace, "calls": c.Calls, "refusals": c.Refusals}
	}
	return c.Now.UTC()
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Eval evaluates the condition over a. An error (a missing argument, a
// cost past CostLimit, a failed conversion) says why it has no value: the
// caller must then fail closed.
func (x *Expr) Eval(a *Activation) (bool, error) {
	out, _, err := x.prg.Eval(a)
	if err != nil {
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("the condition gave %v, not a bool", out)
	}
	return b, nil
}

// provider is CEL's type provider with the struct types of the schema
// and of the built-in variables, whose values are maps at run time.
type provider struct {
	*types.Registry
	structs map[string]*shape
}

func (p *provider) FindStructType(name string) (*types.Type, bool) {
	if _, ok := p.structs[name]; ok {
		return types.NewTypeTypeWithParam(types.NewObjectType(name)), true
	}
	return p.Registry.FindStructType(name)
}

func (p *provider) FindStructFieldNames(name string) ([]string, bool) {
	s, ok := p.structs[name]
	if !ok {
		return p.Registry.FindStructFieldNames(name)
	}
	out := make([]string, 0, len(s.fields))
	for k := range s.fields {
		out = append(out, k)
	}
	return out, true
}

func (p *provider) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	s, ok := p.structs[name]
	if !ok {
		return p.Registry.FindStructFieldType(name, field)
	}
	f, ok := s.fields[field]
	if !ok {
		return nil, false
	}
	return &types.FieldType{Type: f.celType()}, true
}
