package fast

import (
	"encoding/json"
	"maps"
	"math/big"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/custody-dev/custody/contract/internal/draft2020"
	"github.com/custody-dev/custody/internal/strictjson"
)

// Compiler compiles the schemas of one contract document. Its nodes
// are memoized by JSON pointer, so that a recursive $ref becomes a cycle
// in the node graph and the schemas of a document share their $defs.
// It is not safe for concurrent use; the schemas it returns are.
type Compiler struct {
	id    string // the document's base URI
	root  any
	memo  map[string]*node
	added []string // pointers memoized by the compile under way
}

// NewCompiler returns a compiler for the schemas of the contract document
// root, a tree as strictjson.DecodeExact builds it, whose base URI is id.
func NewCompiler(root any, id string) *Compiler {
	return &Compiler{id: id, root: root, memo: map[string]*node{}}
}

// Compile returns the fast path of the schema at the JSON pointer ptr. It
// returns an error wrapping ErrUnsupported when the document declares a
// dialect other than draft 2020-12, or when the schema, or one it refers
// to, uses anything the fast path does not implement; the nodes made on
// the way are then forgotten, as some may refer to the schema that
// failed.
func (c *Compiler) Compile(ptr string) (*Schema, error) {
	doc, _ := c.root.(map[string]any)
	if s, ok := doc["$schema"].(string); ok && strings.TrimSuffix(s, "#") != draft2020.URI {
		return nil, unsupported("", "dialect %s", s)
	}
	c.added = c.added[:0]
	n, err := c.at(ptr)
	if err != nil {
		for _, p := range c.added {
			delete(c.memo, p)
		}
		return nil, err
	}
	return &Schema{root: n}, nil
}

// at returns the node for the schema at ptr.
func (c *Compiler) at(ptr string) (*node, error) {
	if n, ok := c.memo[ptr]; ok {
		return n, nil
	}
	v, err := c.resolve(ptr)
	if err != nil {
		return nil, err
	}
	n := &node{}
	c.memo[ptr] = n
	c.added = append(c.added, ptr)
	if err := c.fill(n, v, ptr); err != nil {
		return nil, err
	}
	if !n.hasLocal() && len(n.all) == 1 && len(n.anyOf)+len(n.oneOf)+len(n.not) == 0 {
		n.delegate = n.all[0]
	}
	return n, nil
}

// resolve returns the value at the JSON pointer ptr. It refuses a schema
// inside a subschema with its own "$id", whose references resolve against
// another base URI.
func (c *Compiler) resolve(ptr string) (any, error) {
	if ptr == "" {
		return c.root, nil
	}
	v := c.root
	for _, tok := range strings.Split(ptr[1:], "/") {
		if strings.Contains(tok, "~") {
			tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		}
		var ok bool
		switch node := v.(type) {
		case map[string]any:
			v, ok = node[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			ok = err == nil && i >= 0 && i < len(node) && tok == strconv.Itoa(i)
			if ok {
				v = node[i]
			}
		}
		if !ok {
			return nil, unsupported(ptr, "nothing there")
		}
		if obj, ok := v.(map[string]any); ok && obj["$id"] != nil {
			return nil, unsupported(ptr, "nested $id")
		}
	}
	return v, nil
}

func (c *Compiler) fill(n *node, v any, ptr string) error {
	switch v := v.(type) {
	case bool:
		n.never = !v
		return nil
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if err := c.keyword(n, v, k, ptr); err != nil {
				return err
			}
		}
		if n.obj != nil {
			n.obj.finish()
		}
		return nil
	}
	return unsupported(ptr, "not a schema")
}

// keyword compiles the keyword k of the schema obj into n.
func (c *Compiler) keyword(n *node, obj map[string]any, k, ptr string) error {
	v := obj[k]
	switch k {
	case "default", "description", "title", "examples", "$comment", "$defs",
		"deprecated", "readOnly", "writeOnly":
		return nil // annotations and containers: no assertion
	case "$schema", "$id":
		if ptr != "" {
			return unsupported(ptr, "%s in a subschema", k)
		}
		return nil
	case "type":
		return c.typeKeyword(n, v, ptr)
	case "enum":
		arr, ok := v.([]any)
		if !ok {
			return unsupported(ptr, "enum is not an array")
		}
		n.enums = append(n.enums, newEnumSet(arr))
		return nil
	case "const":
		n.enums = append(n.enums, newEnumSet([]any{v}))
		return nil
	case "minLength", "maxLength", "pattern", "format":
		return c.stringKeyword(n, k, v, ptr)
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf":
		return c.numberKeyword(n, k, v, ptr)
	case "properties", "patternProperties", "additionalProperties", "required", "minProperties", "maxProperties":
		return c.objectKeyword(n, k, v, ptr)
	case "items", "prefixItems", "minItems", "maxItems", "uniqueItems":
		return c.arrayKeyword(n, k, v, ptr)
	case "allOf", "anyOf", "oneOf", "not", "$ref":
		return c.applicator(n, k, v, ptr)
	}
	return unsupported(ptr, "keyword %q", k)
}

func (c *Compiler) typeKeyword(n *node, v any, ptr string) error {
	names, ok := v.([]any)
	if !ok {
		names = []any{v}
	}
	for _, name := range names {
		s, _ := name.(string)
		t := typeNamed(s)
		if t == 0 {
			return unsupported(ptr, "type %v", name)
		}
		n.types |= t
	}
	if n.types == 0 {
		return unsupported(ptr, "empty type array")
	}
	return nil
}

func (c *Compiler) stringKeyword(n *node, k string, v any, ptr string) error {
	if n.str == nil {
		n.str = &stringRules{minLength: -1, maxLength: -1}
	}
	switch k {
	case "minLength", "maxLength":
		i, ok := count(v)
		if !ok {
			return unsupported(ptr, "%s %v", k, v)
		}
		if k == "minLength" {
			n.str.minLength = i
		} else {
			n.str.maxLength = i
		}
	case "pattern":
		s, _ := v.(string)
		p, err := compilePattern(s)
		if err != nil {
			return unsupported(ptr, "pattern %q: %v", s, err)
		}
		n.str.pattern = p
	case "format":
		f := formatNamed(v)
		if f == noFormat {
			return unsupported(ptr, "format %v", v)
		}
		n.str.format = f
	}
	return nil
}

// count reads a non-negative integer keyword value, as the library reads
// it (2.0 is 2).
func count(v any) (int, bool) {
	num, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	r, ok := new(big.Rat).SetString(string(num))
	if !ok || !r.IsInt() || r.Sign() < 0 || !r.Num().IsInt64() || r.Num().Int64() > 1<<31 {
		return 0, false
	}
	return int(r.Num().Int64()), true
}

func (c *Compiler) numberKeyword(n *node, k string, v any, ptr string) error {
	lit, ok := v.(json.Number)
	if !ok {
		return unsupported(ptr, "%s %v", k, v)
	}
	if n.num == nil {
		n.num = &numberRules{}
	}
	if k == "multipleOf" {
		m, ok := newMultiple(string(lit))
		if !ok {
			return unsupported(ptr, "multipleOf %s", lit)
		}
		n.num.multipleOf = append(n.num.multipleOf, m)
		return nil
	}
	op := map[string]boundOp{"minimum": atLeast, "maximum": atMost, "exclusiveMinimum": above, "exclusiveMaximum": below}[k]
	b, ok := newBound(op, string(lit))
	if !ok {
		return unsupported(ptr, "%s %s", k, lit)
	}
	n.num.bounds = append(n.num.bounds, b)
	return nil
}

func (c *Compiler) objectKeyword(n *node, k string, v any, ptr string) error {
	if n.obj == nil {
		n.obj = &objectRules{minProps: -1, maxProps: -1}
	}
	o, at := n.obj, ptr+"/"+k
	switch k {
	case "properties":
		return c.properties(o, v, at)
	case "patternProperties":
		return c.patternProperties(o, v, at)
	case "additionalProperties":
		node, err := c.at(at)
		o.additional = node
		return err
	case "required":
		names, ok := stringList(v)
		if !ok {
			return unsupported(ptr, "required %v", v)
		}
		o.required = names
	case "minProperties", "maxProperties":
		i, ok := count(v)
		if !ok {
			return unsupported(ptr, "%s %v", k, v)
		}
		if k == "minProperties" {
			o.minProps = i
		} else {
			o.maxProps = i
		}
	}
	return nil
}

func (c *Compiler) properties(o *objectRules, v any, at string) error {
	props, ok := v.(map[string]any)
	if !ok {
		return unsupported(at, "not an object")
	}
	o.index = make(map[string]int, len(props))
	for _, name := range slices.Sorted(maps.Keys(props)) {
		node, err := c.at(at + "/" + strictjson.EscapeToken(name))
		if err != nil {
			return err
		}
		o.index[name] = len(o.props)
		o.props = append(o.props, node)
	}
	return nil
}

func (c *Compiler) patternProperties(o *objectRules, v any, at string) error {
	patterns, ok := v.(map[string]any)
	if !ok {
		return unsupported(at, "not an object")
	}
	for _, src := range slices.Sorted(maps.Keys(patterns)) {
		p, err := compilePattern(src)
		if err != nil {
			return unsupported(at, "pattern %q: %v", src, err)
		}
		node, err := c.at(at + "/" + strictjson.EscapeToken(src))
		if err != nil {
			return err
		}
		o.patterns = append(o.patterns, patternNode{pattern: p, node: node})
	}
	return nil
}

// stringList reads an array of strings.
func stringList(v any) ([]string, bool) {
	arr, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(arr))
	for _, item := range arr {
		s, ok := item.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

func (c *Compiler) arrayKeyword(n *node, k string, v any, ptr string) error {
	if n.arr == nil {
		n.arr = &arrayRules{minItems: -1, maxItems: -1}
	}
	a := n.arr
	switch k {
	case "items":
		node, err := c.at(ptr + "/items")
		a.items = node
		return err
	case "prefixItems":
		nodes, err := c.list(v, ptr+"/prefixItems")
		a.prefix = nodes
		return err
	case "minItems", "maxItems":
		i, ok := count(v)
		if !ok {
			return unsupported(ptr, "%s %v", k, v)
		}
		if k == "minItems" {
			a.minItems = i
		} else {
			a.maxItems = i
		}
	case "uniqueItems":
		b, ok := v.(bool)
		if !ok {
			return unsupported(ptr, "uniqueItems %v", v)
		}
		a.unique = b
	}
	return nil
}

// list compiles a non-empty array of schemas at ptr.
func (c *Compiler) list(v any, ptr string) ([]*node, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return nil, unsupported(ptr, "not a non-empty array")
	}
	out := make([]*node, len(arr))
	for i := range arr {
		node, err := c.at(ptr + "/" + strconv.Itoa(i))
		if err != nil {
			return nil, err
		}
		out[i] = node
	}
	return out, nil
}

func (c *Compiler) applicator(n *node, k string, v any, ptr string) error {
	at := ptr + "/" + k
	switch k {
	case "$ref":
		target, err := c.ref(v, ptr)
		n.all = append(n.all, target)
		return err
	case "not":
		node, err := c.at(at)
		n.not = append(n.not, node)
		return err
	}
	nodes, err := c.list(v, at)
	switch k {
	case "allOf":
		n.all = append(n.all, nodes...)
	case "anyOf":
		n.anyOf = append(n.anyOf, nodes)
	case "oneOf":
		n.oneOf = append(n.oneOf, nodes)
	}
	return err
}

// ref compiles the target of a $ref: a JSON pointer fragment into the
// same document, written "#..." or "ID#...". Anchors and every other
// document are unsupported.
func (c *Compiler) ref(v any, ptr string) (*node, error) {
	ref, _ := v.(string)
	base, frag, hasFrag := strings.Cut(ref, "#")
	if !hasFrag || (base != "" && base != c.id) {
		return nil, unsupported(ptr, "$ref %q", ref)
	}
	target, err := url.PathUnescape(frag)
	if err != nil || (target != "" && target[0] != '/') {
		return nil, unsupported(ptr, "$ref %q", ref)
	}
	return c.at(target)
}
