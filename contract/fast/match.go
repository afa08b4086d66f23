package fast

import (
	"bytes"
	"math/bits"
	"unicode/utf8"

	"github.com/custody-dev/custody/internal/strictjson"
)

// maxFastKeys bounds the members of one object the fast path reads; a
// larger object is unsure, as duplicates are found by linear search.
const maxFastKeys = 128

// scanner reads one document for the fast path. It uses the strict
// decoder's own readers for strings, numbers and literals, and the same
// nesting bound and duplicate-key rule, so that it passes only documents
// that decode: any malformed input is unsure and goes to the decoder,
// which reports it.
type scanner struct {
	d     strictjson.Reader
	keys  [][]byte // member names without a bit, of the objects being read
	nest  int      // containers open around the value being read
	empty node     // the empty schema, for reading a value no keyword checks
}

// accepts reports whether raw is strict JSON and valid against n.
func (n *node) accepts(s *scanner, raw []byte) bool {
	s.d.Reset(raw)
	s.d.SkipSpace()
	ok := n.match(s, 0) == pass
	if ok {
		s.d.SkipSpace()
		ok = s.d.Pos == len(raw)
	}
	// Drop references into raw before the scanner is reused.
	clear(s.keys[:cap(s.keys)])
	s.keys, s.nest, s.d.In = s.keys[:0], 0, nil
	return ok
}

// match reads one value at s.d.Pos and checks it against n.
func (n *node) match(s *scanner, depth int) verdict {
	for n.delegate != nil {
		n, depth = n.delegate, depth+1
		if depth > maxEvalDepth {
			return unsure
		}
	}
	if depth > maxEvalDepth {
		return unsure
	}
	if !n.hasApplicators() {
		return n.matchValue(s, depth)
	}
	return n.matchApplied(s, depth)
}

// matchApplied checks a value against n's own keywords and each schema
// it applies in place. It reads the value once to find where it ends,
// then once per schema.
func (n *node) matchApplied(s *scanner, depth int) verdict {
	start := s.d.Pos
	if s.skip() != pass {
		return unsure
	}
	end := s.d.Pos
	out := pass
	if n.hasLocal() {
		out = s.rerun(n, start, end, depth, true)
	}
	for _, m := range n.all {
		out = max(out, s.rerun(m, start, end, depth, false))
	}
	for _, group := range n.anyOf {
		out = max(out, s.anyOf(group, start, end, depth))
	}
	for _, group := range n.oneOf {
		out = max(out, s.oneOf(group, start, end, depth))
	}
	for _, m := range n.not {
		out = max(out, negate(s.rerun(m, start, end, depth, false)))
	}
	s.d.Pos = end
	return out
}

// rerun checks the value at start, which ends at end, against n: its own
// keywords only when local is set.
func (s *scanner) rerun(n *node, start, end, depth int, local bool) verdict {
	s.d.Pos = start
	var v verdict
	if local {
		v = n.matchValue(s, depth)
	} else {
		v = n.match(s, depth+1)
	}
	if v == pass && s.d.Pos != end {
		return unsure
	}
	return v
}

func (s *scanner) anyOf(nodes []*node, start, end, depth int) verdict {
	out := fail
	for _, m := range nodes {
		switch s.rerun(m, start, end, depth, false) {
		case pass:
			return pass
		case unsure:
			out = unsure
		}
	}
	return out
}

func (s *scanner) oneOf(nodes []*node, start, end, depth int) verdict {
	passed, doubt := 0, false
	for _, m := range nodes {
		switch s.rerun(m, start, end, depth, false) {
		case pass:
			passed++
		case unsure:
			doubt = true
		}
	}
	if doubt {
		return unsure
	}
	return verdictOf(passed == 1)
}

func negate(v verdict) verdict {
	switch v {
	case pass:
		return fail
	case fail:
		return pass
	}
	return unsure
}

// skip reads one value that no keyword checks.
func (s *scanner) skip() verdict { return s.empty.matchValue(s, 0) }

// matchAll reads one value that every node in nodes must accept.
func (s *scanner) matchAll(nodes []*node, depth int) verdict {
	switch len(nodes) {
	case 0:
		return s.skip()
	case 1:
		return nodes[0].match(s, depth+1)
	}
	start := s.d.Pos
	if s.skip() != pass {
		return unsure
	}
	end := s.d.Pos
	out := pass
	for _, m := range nodes {
		out = max(out, s.rerun(m, start, end, depth, false))
	}
	s.d.Pos = end
	return out
}

// matchValue reads one value and checks n's own keywords.
func (n *node) matchValue(s *scanner, depth int) verdict {
	if n.never {
		return fail
	}
	d := &s.d
	if d.Pos >= len(d.In) {
		return unsure
	}
	switch b := d.In[d.Pos]; {
	case b == '{':
		return n.matchObject(s, depth)
	case b == '[':
		return n.matchArray(s, depth)
	case b == '"':
		return n.matchString(s)
	case b == '-' || (b >= '0' && b <= '9'):
		return n.matchNumber(s)
	case b == 't':
		return n.matchLiteral(s, "true", typeBoolean)
	case b == 'f':
		return n.matchLiteral(s, "false", typeBoolean)
	case b == 'n':
		return n.matchLiteral(s, "null", typeNull)
	}
	return unsure
}

func (n *node) matchLiteral(s *scanner, lit string, t typeSet) verdict {
	start := s.d.Pos
	if s.d.Literal(lit) != nil {
		return unsure
	}
	if !n.types.allows(t) {
		return fail
	}
	return n.matchEnums(s.d.In[start:s.d.Pos])
}

// matchEnums checks a value other than a string against enum and const.
func (n *node) matchEnums(raw []byte) verdict {
	for _, e := range n.enums {
		if v := e.hasValue(raw); v != pass {
			return v
		}
	}
	return pass
}

func (n *node) matchString(s *scanner) verdict {
	str, err := s.d.StringBytes()
	if err != nil {
		return unsure
	}
	if !n.types.allows(typeString) {
		return fail
	}
	if n.str != nil {
		if v := n.str.check(str); v != pass {
			return v
		}
	}
	for _, e := range n.enums {
		if v := e.hasString(str); v != pass {
			return v
		}
	}
	return pass
}

// check applies minLength and maxLength (in code points), pattern and
// format to a string's content.
func (r *stringRules) check(str []byte) verdict {
	if r.minLength >= 0 || r.maxLength >= 0 {
		n := utf8.RuneCount(str)
		if n < r.minLength || (r.maxLength >= 0 && n > r.maxLength) {
			return fail
		}
	}
	if r.pattern != nil && !r.pattern.match(str) {
		return fail
	}
	return verdictOf(r.format.check(str))
}

func (n *node) matchNumber(s *scanner) verdict {
	lit, err := s.d.NumberBytes()
	if err != nil {
		return unsure
	}
	if v := n.types.number(lit); v != pass {
		return v
	}
	if n.num != nil {
		if v := n.num.check(lit); v != pass {
			return v
		}
	}
	return n.matchEnums(lit)
}

// number checks "type" for the number literal lit.
func (t typeSet) number(lit []byte) verdict {
	switch {
	case t.allows(typeNumber):
		return pass
	case t&typeInteger == 0:
		return fail
	}
	isInt, known := literalInteger(lit)
	if !known {
		return unsure
	}
	return verdictOf(isInt)
}

func (r *numberRules) check(lit []byte) verdict {
	if len(r.bounds) > 0 {
		if !numberKnown(lit) {
			return unsure
		}
		f := literalFloat(lit)
		for i := range r.bounds {
			if v := r.bounds[i].holds(lit, f); v != pass {
				return v
			}
		}
	}
	for _, m := range r.multipleOf {
		if v := m.divides(lit); v != pass {
			return v
		}
	}
	return pass
}

func (n *node) matchObject(s *scanner, depth int) verdict {
	if !n.types.allows(typeObject) {
		return fail
	}
	start, base := s.d.Pos, len(s.keys)
	s.nest++
	v, seen := unsure, uint64(0)
	if s.nest <= strictjson.MaxDepth {
		v, seen = n.members(s, base, depth)
	}
	if v == pass && n.obj != nil {
		v = n.obj.checkNames(seen, s.keys[base:])
	}
	s.keys = s.keys[:base]
	s.nest--
	if v != pass {
		return v
	}
	return n.matchEnums(s.d.In[start:s.d.Pos])
}

// members reads the members of an object. It returns the bits of the
// properties it read; the names of the others go on s.keys from base.
func (n *node) members(s *scanner, base, depth int) (verdict, uint64) {
	d := &s.d
	d.Pos++ // '{'
	d.SkipSpace()
	if d.Pos < len(d.In) && d.In[d.Pos] == '}' {
		d.Pos++
		return pass, 0
	}
	var seen uint64
	for {
		name, ok := s.name()
		if !ok {
			return unsure, seen
		}
		i := n.obj.lookup(name)
		if i >= 0 && i < bitProps {
			if seen&(1<<i) != 0 {
				return unsure, seen // a duplicate: the decoder refuses it
			}
			seen |= 1 << i
		} else if !s.newName(base, name) {
			return unsure, seen
		}
		if v := n.member(s, i, name, depth); v != pass {
			return v, seen
		}
		d.SkipSpace()
		if d.Pos >= len(d.In) {
			return unsure, seen
		}
		switch d.In[d.Pos] {
		case ',':
			d.Pos++
		case '}':
			d.Pos++
			return pass, seen
		default:
			return unsure, seen
		}
	}
}

// name reads a member name and the colon after it.
func (s *scanner) name() ([]byte, bool) {
	d := &s.d
	d.SkipSpace()
	if d.Pos >= len(d.In) || d.In[d.Pos] != '"' {
		return nil, false
	}
	start := d.Pos
	name, err := d.StringBytes()
	if err != nil {
		return nil, false
	}
	if d.Pos-start != len(name)+2 {
		name = bytes.Clone(name) // escaped: d.buf is reused by the next string
	}
	d.SkipSpace()
	if d.Pos >= len(d.In) || d.In[d.Pos] != ':' {
		return nil, false
	}
	d.Pos++
	d.SkipSpace()
	return name, true
}

// newName records a member name without a bit; it refuses one the object
// already has, and more than maxFastKeys of them.
func (s *scanner) newName(base int, name []byte) bool {
	if len(s.keys)-base >= maxFastKeys {
		return false
	}
	for _, k := range s.keys[base:] {
		if bytes.Equal(k, name) {
			return false
		}
	}
	s.keys = append(s.keys, name)
	return true
}

// member reads the value of the member name, property i (or -1), checked
// against every schema that applies to it: properties and matching
// patternProperties, else additionalProperties.
func (n *node) member(s *scanner, i int, name []byte, depth int) verdict {
	o := n.obj
	if o == nil {
		return s.skip()
	}
	var buf [4]*node
	apply := buf[:0]
	if i >= 0 {
		apply = append(apply, o.props[i])
	}
	for i := range o.patterns {
		if o.patterns[i].pattern.match(name) {
			apply = append(apply, o.patterns[i].node)
		}
	}
	if len(apply) == 0 && o.additional != nil {
		apply = append(apply, o.additional)
	}
	return s.matchAll(apply, depth)
}

// checkNames applies required, minProperties and maxProperties to the
// members of an object: the properties with a bit in seen, and names.
func (o *objectRules) checkNames(seen uint64, names [][]byte) verdict {
	count := bits.OnesCount64(seen) + len(names)
	if count < o.minProps || (o.maxProps >= 0 && count > o.maxProps) || seen&o.requiredBits != o.requiredBits {
		return fail
	}
	for _, want := range o.requiredNames {
		found := false
		for _, k := range names {
			if string(k) == want {
				found = true
				break
			}
		}
		if !found {
			return fail
		}
	}
	return pass
}

func (n *node) matchArray(s *scanner, depth int) verdict {
	if !n.types.allows(typeArray) {
		return fail
	}
	start := s.d.Pos
	s.nest++
	v, count := unsure, 0
	if s.nest <= strictjson.MaxDepth {
		v, count = n.elements(s, depth)
	}
	s.nest--
	if v == pass && n.arr != nil {
		v = n.arr.check(count, s.d.In[start:s.d.Pos])
	}
	if v != pass {
		return v
	}
	return n.matchEnums(s.d.In[start:s.d.Pos])
}

// elements reads the items of an array and returns how many it read.
func (n *node) elements(s *scanner, depth int) (verdict, int) {
	d := &s.d
	d.Pos++ // '['
	d.SkipSpace()
	if d.Pos < len(d.In) && d.In[d.Pos] == ']' {
		d.Pos++
		return pass, 0
	}
	for i := 0; ; i++ {
		d.SkipSpace()
		if v := s.item(n.arr, i, depth); v != pass {
			return v, i
		}
		d.SkipSpace()
		if d.Pos >= len(d.In) {
			return unsure, i
		}
		switch d.In[d.Pos] {
		case ',':
			d.Pos++
		case ']':
			d.Pos++
			return pass, i + 1
		default:
			return unsure, i
		}
	}
}

// item reads item i of an array, checked against prefixItems or items.
func (s *scanner) item(a *arrayRules, i, depth int) verdict {
	switch {
	case a == nil:
		return s.skip()
	case i < len(a.prefix):
		return a.prefix[i].match(s, depth+1)
	case a.items != nil:
		return a.items.match(s, depth+1)
	}
	return s.skip()
}

// check applies minItems, maxItems and uniqueItems to an array of count
// items whose text is raw.
func (a *arrayRules) check(count int, raw []byte) verdict {
	if count < a.minItems || (a.maxItems >= 0 && count > a.maxItems) {
		return fail
	}
	if a.unique && count > 1 {
		return uniqueItems(raw)
	}
	return pass
}
