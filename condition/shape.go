package condition

import (
	"encoding/json"
	"strconv"
	"strings"

	"cel.dev/cel-go/cel"
)

// kind is what a schema says of a value's type, as far as CEL can use it.
type kind int

const (
	dyn kind = iota
	str
	integer
	number
	boolean
	list
	object // a closed object: its properties are all it may have
	dict   // an object whose members nobody lists
)

// shape is the type of a value a schema declares: closed objects become
// CEL struct types whose fields the checker knows, so that a condition
// naming a field the schema lacks, or using one as the wrong type, fails
// at load.
type shape struct {
	kind   kind
	name   string            // the struct type name of an object
	fields map[string]*shape // of an object
	items  *shape            // of a list
}

// maxDepth bounds how deep shapeOf follows a schema, so that a recursive
// $ref ends; below it values are dyn.
const maxDepth = 16

// shapeOf returns the shape a JSON Schema (decoded) declares, naming
// struct types after name.
func shapeOf(root, schema any, name string, depth int) *shape {
	s, ok := schema.(map[string]any)
	if !ok || depth > maxDepth {
		return &shape{kind: dyn}
	}
	if ref, ok := s["$ref"].(string); ok && len(s) == 1 {
		return shapeOf(root, resolveLocal(root, ref), name, depth+1)
	}
	if hasAny(s, "anyOf", "oneOf", "allOf", "$ref", "$dynamicRef", "if", "not") {
		return &shape{kind: dyn}
	}
	t, _ := s["type"].(string)
	switch t {
	case "string":
		return &shape{kind: str}
	case "integer":
		return &shape{kind: integer}
	case "number":
		return &shape{kind: number}
	case "boolean":
		return &shape{kind: boolean}
	case "array":
		if _, tuple := s["prefixItems"]; tuple {
			return &shape{kind: list, items: &shape{kind: dyn}}
		}
		return &shape{kind: list, items: shapeOf(root, s["items"], name+".item", depth+1)}
	case "object":
		return objectShape(root, s, name, depth)
	}
	return &shape{kind: dyn}
}

// objectShape is the shape of an object schema: a struct when its
// properties are all it may have, else a map of any values.
func objectShape(root any, s map[string]any, name string, depth int) *shape {
	props, _ := s["properties"].(map[string]any)
	if ap, ok := s["additionalProperties"].(bool); !ok || ap || props == nil || hasAny(s, "patternProperties", "unevaluatedProperties") {
		return &shape{kind: dict}
	}
	out := &shape{kind: object, name: name, fields: make(map[string]*shape, len(props))}
	for k, sub := range props {
		out.fields[k] = shapeOf(root, sub, name+"."+k, depth+1)
	}
	return out
}

func hasAny(s map[string]any, keys ...string) bool {
	for _, k := range keys {
		if _, ok := s[k]; ok {
			return true
		}
	}
	return false
}

// resolveLocal follows a reference into the schema's own document
// ("#/$defs/x"); nil for any other.
func resolveLocal(root any, ref string) any {
	ptr, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil
	}
	v := root
	for _, tok := range strings.Split(ptr, "/")[1:] {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[tok]
	}
	return v
}

// celType is the CEL type of a value of shape s.
func (s *shape) celType() *cel.Type {
	switch s.kind {
	case str:
		return cel.StringType
	case integer:
		return cel.IntType
	case number:
		return cel.DoubleType
	case boolean:
		return cel.BoolType
	case list:
		return cel.ListType(s.items.celType())
	case object:
		return cel.ObjectType(s.name)
	case dict:
		return cel.MapType(cel.StringType, cel.DynType)
	}
	return cel.DynType
}

// structs adds the struct types of s and the shapes below it to out.
func (s *shape) structs(out map[string]*shape) {
	if s.kind == object {
		out[s.name] = s
	}
	for _, f := range s.fields {
		f.structs(out)
	}
	if s.items != nil {
		s.items.structs(out)
	}
}

// value converts a JSON value decoded with UseNumber to what CEL expects
// of shape s: a number becomes an int or a double as the schema declares,
// and, where it declares neither, an int when it is written as one.
func (s *shape) value(v any) any {
	switch t := v.(type) {
	case json.Number:
		return s.number(t)
	case map[string]any:
		for k, sub := range t {
			t[k] = s.field(k).value(sub)
		}
		return t
	case []any:
		item := s.items
		if item == nil {
			item = &shape{kind: dyn}
		}
		for i, sub := range t {
			t[i] = item.value(sub)
		}
		return t
	}
	return v
}

var dynShape = &shape{kind: dyn}

// field is the shape of member k of an object of shape s.
func (s *shape) field(k string) *shape {
	if f, ok := s.fields[k]; ok {
		return f
	}
	return dynShape
}

// number converts a number literal.
func (s *shape) number(n json.Number) any {
	if s.kind != number {
		if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			return i
		}
	}
	f, err := n.Float64()
	if err != nil {
		return string(n)
	}
	if s.kind == integer && f == float64(int64(f)) {
		return int64(f)
	}
	return f
}
