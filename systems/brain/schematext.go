package brain

import (
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
)

// The packet contract's leak rule is that a packet carrying an extra
// transcript or body field is refused at the wire. A checked contract
// keeps that promise only if it adds no field, beyond the shipped
// contract's, that could carry text. This file decides whether one schema
// admits free text, and compares a checked contract with the shipped one.
//
// A schema is bounded when every value it admits is a number, an integer,
// a boolean, null, a value the contract itself lists (enum, const), a
// string with maxLength at most packetTextCap, or a closed object
// (additionalProperties false, no patternProperties) whose properties are
// all bounded; an array never is. A schema with a $ref is bounded when
// the $ref's target is, whatever its siblings say (older drafts ignore
// them). Any other schema is bounded when one conjunct bounds it: its own
// type, one allOf branch, all its anyOf branches or all its oneOf
// branches.
//
// Only what is simply resolvable is resolved: a $ref that is a "#" JSON
// pointer into the same document. A remote or relative reference, a plain
// "#anchor", $dynamicRef and $recursiveRef are not followed and count as
// free text; an $id below the root is refused outright, since the $refs
// inside it would resolve against it. Caps split across conjuncts
// (allOf: [{type: string}, {maxLength: 50}]) are not combined, and not,
// if, then, else and dependentSchemas are never used to prove a bound:
// such schemas are refused, never passed on a guess.

// valueKeywords are the keywords that hold instance values, not schemas.
func valueKeywords() []string { return []string{"const", "default", "enum", "examples"} }

// boundedTypes are the JSON types that carry no text.
func boundedTypes() []string { return []string{"boolean", "integer", "null", "number"} }

// leak is where a schema admits free text, and why.
type leak struct{ at, why string }

// resolver decides boundedness within one contract document.
type resolver struct{ root any }

// freeText returns where the schema v (at JSON pointer at) admits free text,
// or nil when it is bounded.
func (r resolver) freeText(v any, at string) *leak {
	return r.leakSeen(v, at, nil)
}

func (r resolver) leakSeen(v any, at string, seen []string) *leak {
	switch x := v.(type) {
	case bool:
		if !x {
			return nil
		}
		return &leak{at, "the schema true admits any value"}
	case map[string]any:
		return r.mapLeak(x, at, seen)
	}
	return &leak{at, "not a schema"}
}

// mapLeak returns the leak of m's $ref target when it has one; otherwise
// nil as soon as one conjunct bounds m, else the leak of the first
// conjunct tried.
func (r resolver) mapLeak(m map[string]any, at string, seen []string) *leak {
	if ref, has := m["$ref"]; has {
		s, ok := ref.(string)
		if !ok {
			return &leak{at, "$ref is not a string"}
		}
		return r.refLeak(s, at, seen)
	}
	if _, ok := m["const"]; ok {
		return nil
	}
	if _, ok := m["enum"].([]any); ok {
		return nil
	}
	var first *leak
	try := func(l *leak) bool {
		if first == nil {
			first = l
		}
		return l == nil
	}
	if _, ok := m["type"]; ok && try(r.ownLeak(m, at, seen)) {
		return nil
	}
	for _, kw := range []string{"$dynamicRef", "$recursiveRef"} {
		if _, ok := m[kw]; ok {
			try(&leak{at, kw + " is not resolved here"})
		}
	}
	if all, ok := m["allOf"].([]any); ok {
		for i, b := range all {
			if try(r.leakSeen(b, fmt.Sprintf("%s/allOf/%d", at, i), seen)) {
				return nil
			}
		}
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if branches, ok := m[kw].([]any); ok && try(r.everyBranch(branches, at+"/"+kw, seen)) {
			return nil
		}
	}
	if first == nil {
		return &leak{at, "no type: it admits any value, text included"}
	}
	return first
}

// everyBranch returns the first branch that admits free text, or nil.
func (r resolver) everyBranch(branches []any, at string, seen []string) *leak {
	if len(branches) == 0 {
		return &leak{at, "no branches"}
	}
	for i, b := range branches {
		if l := r.leakSeen(b, fmt.Sprintf("%s/%d", at, i), seen); l != nil {
			return l
		}
	}
	return nil
}

// ownLeak checks m's type keyword against every type it allows.
func (r resolver) ownLeak(m map[string]any, at string, seen []string) *leak {
	var types []any
	switch t := m["type"].(type) {
	case string:
		types = []any{t}
	case []any:
		types = t
	}
	if len(types) == 0 {
		return &leak{at, "type is not a type name or a list of them"}
	}
	for _, t := range types {
		name, _ := t.(string)
		switch {
		case slices.Contains(boundedTypes(), name):
		case name == "string":
			if !capped(m["maxLength"], packetTextCap) {
				return &leak{at, fmt.Sprintf("a string without maxLength at most %d", packetTextCap)}
			}
		case name == "object":
			if l := r.objectLeak(m, at, seen); l != nil {
				return l
			}
		case name == "array":
			return &leak{at, "an array"}
		default:
			return &leak{at, fmt.Sprintf("type %v", t)}
		}
	}
	return nil
}

// objectLeak checks an object schema: closed, and every property bounded.
func (r resolver) objectLeak(m map[string]any, at string, seen []string) *leak {
	props, _ := m["properties"].(map[string]any)
	for _, name := range sortedKeys(props) {
		if l := r.leakSeen(props[name], at+"/properties/"+escapePointer(name), seen); l != nil {
			return l
		}
	}
	if _, ok := m["patternProperties"]; ok {
		return &leak{at, "patternProperties: their names are free text"}
	}
	if m["additionalProperties"] != false {
		return &leak{at, "an object without additionalProperties: false"}
	}
	return nil
}

// refLeak follows a $ref to a "#" JSON pointer of this document.
func (r resolver) refLeak(ref, at string, seen []string) *leak {
	if slices.Contains(seen, ref) {
		return &leak{at, fmt.Sprintf("$ref %q is recursive", ref)}
	}
	target, ok := r.resolve(ref)
	if !ok {
		return &leak{at, fmt.Sprintf("$ref %q cannot be resolved here (only \"#/...\" pointers into this document are)", ref)}
	}
	return r.leakSeen(target, strings.TrimPrefix(ref, "#"), append(slices.Clip(seen), ref))
}

// resolve returns the value at ref, a "#" URI fragment holding a JSON
// pointer into the root document.
func (r resolver) resolve(ref string) (any, bool) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, false
	}
	ptr, err := url.PathUnescape(frag)
	if err != nil || (ptr != "" && !strings.HasPrefix(ptr, "/")) {
		return nil, false
	}
	v := r.root
	if ptr == "" {
		return v, true
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[tok]; !ok {
			return nil, false
		}
	}
	return v, true
}

// newText compares the checked contract with the shipped one, schema by
// schema at the same JSON pointer, and returns a problem for every
// property the shipped contract lacks that admits free text, every
// pattern property added, and every schema the shipped contract bounds
// that now admits free text (through a $ref, allOf, anyOf or oneOf detour,
// say). A schema whose shipped cap was loosened is left to loosenedCaps.
func newText(shipped, checked any) []string {
	c := comparison{shipped: resolver{shipped}, checked: resolver{checked}}
	c.walk(shipped, checked, "")
	return append(embeddedResources(checked, ""), c.problems...)
}

// comparison walks a checked contract beside the shipped one.
type comparison struct {
	shipped, checked resolver
	problems         []string
}

func (c *comparison) walk(s, v any, at string) {
	switch x := v.(type) {
	case []any:
		sl, _ := s.([]any)
		for i, e := range x {
			var se any
			if i < len(sl) {
				se = sl[i]
			}
			c.walk(se, e, fmt.Sprintf("%s/%d", at, i))
		}
	case map[string]any:
		c.walkSchema(s, x, at)
	case bool:
		sm, _ := s.(map[string]any)
		c.widened(sm, x, at)
	}
}

func (c *comparison) walkSchema(s any, m map[string]any, at string) {
	sm, _ := s.(map[string]any)
	if c.widened(sm, m, at) {
		return
	}
	sprops, _ := sm["properties"].(map[string]any)
	props, _ := m["properties"].(map[string]any)
	for _, name := range sortedKeys(props) {
		if sp, ok := sprops[name]; ok {
			c.walk(sp, props[name], at+"/properties/"+escapePointer(name))
		} else {
			c.added(props[name], at+"/properties/"+escapePointer(name))
		}
	}
	spat, _ := sm["patternProperties"].(map[string]any)
	pats, _ := m["patternProperties"].(map[string]any)
	for _, p := range sortedKeys(pats) {
		if sp, ok := spat[p]; ok {
			c.walk(sp, pats[p], at+"/patternProperties/"+escapePointer(p))
		} else {
			c.problems = append(c.problems, fmt.Sprintf("%s/patternProperties/%s: new pattern property: the names it admits are free text",
				at, escapePointer(p)))
		}
	}
	for _, k := range sortedKeys(m) {
		if k != "properties" && k != "patternProperties" && !slices.Contains(valueKeywords(), k) {
			c.walk(sm[k], m[k], at+"/"+escapePointer(k))
		}
	}
}

// added reports a property the shipped contract lacks unless it is bounded.
func (c *comparison) added(v any, at string) {
	if l := c.checked.freeText(v, at); l != nil {
		c.problems = append(c.problems, fmt.Sprintf("%s: new property admits free text%s; a property the shipped contract lacks must be "+
			"a number, an integer, a boolean, an enum or a string with maxLength at most %d", at, l.detail(at), packetTextCap))
	}
}

// widened reports a schema the shipped contract bounds that the checked
// one changed to admit free text, and says whether it did.
func (c *comparison) widened(s map[string]any, v any, at string) bool {
	m, _ := v.(map[string]any)
	if s == nil || reflect.DeepEqual(s, v) || len(loosened(s, m)) > 0 || c.shipped.freeText(s, at) != nil {
		return false
	}
	l := c.checked.freeText(v, at)
	if l == nil {
		return false
	}
	c.problems = append(c.problems, fmt.Sprintf("%s: now admits free text%s; the shipped contract bounds it", cmpPointer(at), l.detail(at)))
	return true
}

// detail describes l as seen from the schema at at.
func (l *leak) detail(at string) string {
	if l.at == at {
		return ": " + l.why
	}
	return fmt.Sprintf(" at %s: %s", cmpPointer(l.at), l.why)
}

// embeddedResources returns a problem for every $id below the root: it
// starts a schema resource of its own, against which "#" references
// resolve, so its $refs cannot be checked against this document.
func embeddedResources(v any, at string) []string {
	var problems []string
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["$id"].(string); ok && at != "" {
			problems = append(problems, fmt.Sprintf("%s: $id embeds a schema resource whose $refs cannot be checked here", at))
		}
		for _, k := range sortedKeys(x) {
			problems = append(problems, embeddedResources(x[k], at+"/"+escapePointer(k))...)
		}
	case []any:
		for i, e := range x {
			problems = append(problems, embeddedResources(e, fmt.Sprintf("%s/%d", at, i))...)
		}
	}
	return problems
}
