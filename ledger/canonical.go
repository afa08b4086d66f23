package ledger

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/custody-dev/custody/internal/strictjson"
)

// MaxSafeInteger is 2^53, the largest of the range of integers a double
// holds without gaps. RFC 8785 hashes doubles, so an integer literal
// beyond ±2^53 is refused: 9007199254740993 would hash like
// 9007199254740992, and an approval for one would authorise the other.
const MaxSafeInteger = strictjson.MaxSafeInteger

// maxDepth bounds nesting so hostile input cannot exhaust the stack.
const maxDepth = strictjson.MaxDepth

// SyntaxError says what is wrong with a JSON document and where.
type SyntaxError struct {
	Offset int // byte offset into the document
	Msg    string
}

// Error returns the message prefixed with the byte offset.
func (e *SyntaxError) Error() string { return fmt.Sprintf("at byte %d: %s", e.Offset, e.Msg) }

// syntaxError turns the shared reader's *strictjson.SyntaxError into the
// ledger's own; any other error is returned as it is.
func syntaxError(err error) error {
	if se, ok := err.(*strictjson.SyntaxError); ok {
		return &SyntaxError{Offset: se.Offset, Msg: se.Msg}
	}
	return err
}

// Canonicalize returns the RFC 8785 (JCS) form of the JSON document raw.
// It refuses what cannot be hashed faithfully, by the rules of the strict
// reader every front door shares: invalid JSON or UTF-8, lone surrogates,
// duplicate object keys, nesting deeper than 512, and numbers a double
// would not hold as written (see the package documentation). The error
// is a *SyntaxError.
func Canonicalize(raw []byte) ([]byte, error) {
	return AppendCanonical(make([]byte, 0, len(raw)), raw)
}

// AppendCanonical appends the canonical form of raw to dst. On error it
// returns dst unchanged and a *SyntaxError.
func AppendCanonical(dst, raw []byte) ([]byte, error) {
	var stack [16]member
	c := canon{members: stack[:0]}
	return c.appendDoc(dst, raw)
}

// Check reports whether raw is a document Canonicalize accepts: strict
// JSON, as every front door reads it.
func Check(raw []byte) error {
	_, err := Canonicalize(raw)
	return err
}

// canon is the state of one canonicalization. Its buffers survive between
// documents, so a long-lived canon (in a Verifier, say) stops allocating
// once it has seen the largest document.
type canon struct {
	// d reads the document: the strict rules are strictjson's, and the
	// canonicalizer only writes what it reads.
	d strictjson.Reader
	// members is a stack shared by nested objects: each object owns the
	// members above the length it found on entry.
	members []member
	// scratch holds an object's members while they are written back in
	// order, and sbuf the decoded form of an escaped string value.
	scratch []byte
	sbuf    []byte
	keys    []sortKey
}

// member is one object member already written to the output.
type member struct {
	key        []byte // decoded key, UTF-8; aliases the input when unescaped
	keyAt      int    // offset of the key in the input, for errors
	start, end int    // canonical `"key":value` bytes in the output
}

// sortKey stands for members[i] while an object's members are sorted:
// small to move, and prefix, the first eight bytes of the key big-endian
// and padded with zeros, settles most comparisons in one instruction.
type sortKey struct {
	prefix uint64
	i      int
}

func keyPrefix(key []byte) uint64 {
	if len(key) >= 8 {
		return binary.BigEndian.Uint64(key)
	}
	var p uint64
	for i, b := range key {
		p |= uint64(b) << (56 - 8*i)
	}
	return p
}

// compareKeys orders members as RFC 8785 orders keys. Prefixes of ASCII
// order as their bytes do; when they are equal or hold other characters,
// the keys are compared in full.
func compareKeys(ms []member, a, b sortKey) int {
	if a.prefix != b.prefix && (a.prefix|b.prefix)&0x8080808080808080 == 0 {
		return cmp.Compare(a.prefix, b.prefix)
	}
	return compareUTF16(ms[a.i].key, ms[b.i].key)
}

func (c *canon) appendDoc(dst, raw []byte) ([]byte, error) {
	c.d.In, c.d.Pos, c.members = raw, 0, c.members[:0]
	mark := len(dst)
	c.d.SkipSpace()
	out, err := c.value(dst, 0)
	if err == nil {
		err = c.d.End()
	}
	c.d.In = nil
	if err != nil {
		return dst[:mark], syntaxError(err)
	}
	return out, nil
}

// value appends the canonical form of the value at the reader's position,
// inside depth objects and arrays.
func (c *canon) value(dst []byte, depth int) ([]byte, error) {
	switch c.d.Peek() {
	case '"':
		return c.stringValue(dst)
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return c.number(dst)
	case '{':
		if err := c.d.Nest(depth + 1); err != nil {
			return dst, err
		}
		return c.object(dst, depth+1)
	case '[':
		if err := c.d.Nest(depth + 1); err != nil {
			return dst, err
		}
		return c.array(dst, depth+1)
	case 't':
		return c.literal(dst, "true")
	case 'f':
		return c.literal(dst, "false")
	case 'n':
		return c.literal(dst, "null")
	}
	return dst, c.d.Unexpected()
}

func (c *canon) literal(dst []byte, lit string) ([]byte, error) {
	if err := c.d.Literal(lit); err != nil {
		return dst, err
	}
	return append(dst, lit...), nil
}

// stringValue appends the canonical form of the string literal at the
// reader's position. A literal without escapes is already canonical and
// is copied as is.
func (c *canon) stringValue(dst []byte) ([]byte, error) {
	start := c.d.Pos
	s, escaped, err := c.d.String(c.sbuf[:0])
	if err != nil {
		return dst, err
	}
	if !escaped {
		return append(dst, c.d.In[start:c.d.Pos]...), nil
	}
	c.sbuf = s
	return appendString(dst, s), nil
}

// number appends the canonical form of the number literal at the
// reader's position: an integer literal, which the rules keep within
// ±2^53, is its own canonical form (JSON forbids leading zeros) except
// for -0; any other is written as ECMAScript writes its double.
func (c *canon) number(dst []byte) ([]byte, error) {
	n, err := c.d.Number()
	switch {
	case err != nil:
		return dst, err
	case !n.Int:
		return AppendNumber(dst, n.Float), nil
	case len(n.Lit) == 2 && n.Lit[0] == '-' && n.Lit[1] == '0':
		return append(dst, '0'), nil
	}
	return append(dst, n.Lit...), nil
}

func (c *canon) object(dst []byte, depth int) ([]byte, error) {
	open := len(dst)
	dst = append(dst, '{')
	c.d.Pos++
	c.d.SkipSpace()
	if c.d.Peek() == '}' {
		c.d.Pos++
		return append(dst, '}'), nil
	}
	base := len(c.members)
	for {
		var err error
		if dst, err = c.member(dst, depth); err != nil {
			return dst, err
		}
		c.d.SkipSpace()
		if b := c.d.Peek(); b == '}' {
			c.d.Pos++
			break
		} else if b != ',' {
			return dst, c.endOf("object", '}')
		}
		c.d.Pos++
		dst = append(dst, ',')
		c.d.SkipSpace()
	}
	dst, err := c.order(dst, open, c.members[base:])
	c.members = c.members[:base]
	if err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}

// endOf is the error for a byte that neither continues nor closes an
// object or array.
func (c *canon) endOf(container string, closer byte) error {
	if c.d.Pos >= len(c.d.In) {
		return c.d.Fail("unexpected end of JSON in %s", container)
	}
	return c.d.Fail("expected ',' or '%c' in %s", closer, container)
}

// member appends one `"key":value` in canonical form and pushes it on the
// member stack.
func (c *canon) member(dst []byte, depth int) ([]byte, error) {
	keyAt, start := c.d.Pos, len(dst)
	if c.d.Peek() != '"' {
		return dst, c.d.Fail("expected an object key")
	}
	// Key would do, but String and the colon read here save a call for
	// every member of every document the ledger hashes.
	key, escaped, err := c.d.String(nil)
	if err != nil {
		return dst, err
	}
	if escaped {
		dst = appendString(dst, key)
	} else {
		dst = append(dst, c.d.In[keyAt:keyAt+len(key)+2]...)
	}
	c.d.SkipSpace()
	if c.d.Peek() != ':' {
		return dst, c.d.Fail("expected ':' after object key %q", key)
	}
	c.d.Pos++
	c.d.SkipSpace()
	dst = append(dst, ':')
	if dst, err = c.value(dst, depth); err != nil {
		return dst, err
	}
	c.members = append(c.members, member{key: key, keyAt: keyAt, start: start, end: len(dst)})
	return dst, nil
}

// order rewrites the members of the object opened at dst[open] in RFC 8785
// order, refusing duplicate keys. Members already in order, the common
// case for machine-written JSON, cost one comparison each.
func (c *canon) order(dst []byte, open int, ms []member) ([]byte, error) {
	keys := c.keys[:0]
	for i := range ms {
		keys = append(keys, sortKey{prefix: keyPrefix(ms[i].key), i: i})
	}
	c.keys = keys
	sorted := true
	for i := 1; i < len(keys) && sorted; i++ {
		sorted = compareKeys(ms, keys[i-1], keys[i]) < 0
	}
	if sorted {
		return dst, nil
	}
	slices.SortFunc(keys, func(a, b sortKey) int { return compareKeys(ms, a, b) })
	if err := duplicateKey(ms, keys); err != nil {
		return dst, err
	}
	base := open + 1
	c.scratch = append(c.scratch[:0], dst[base:]...)
	dst = dst[:base]
	for n, k := range keys {
		if n > 0 {
			dst = append(dst, ',')
		}
		m := &ms[k.i]
		dst = append(dst, c.scratch[m.start-base:m.end-base]...)
	}
	return dst, nil
}

// duplicateKey returns an error naming the earliest repeated key of the
// members ms, sorted by keys, or nil.
func duplicateKey(ms []member, keys []sortKey) error {
	var dup *member
	for n := 1; n < len(keys); n++ {
		a, b := &ms[keys[n-1].i], &ms[keys[n].i]
		if string(a.key) != string(b.key) {
			continue
		}
		second := max(a.keyAt, b.keyAt)
		if dup == nil || second < dup.keyAt {
			dup = a
			if b.keyAt == second {
				dup = b
			}
		}
	}
	if dup == nil {
		return nil
	}
	return strictjson.DuplicateKey(dup.keyAt, dup.key)
}

func (c *canon) array(dst []byte, depth int) ([]byte, error) {
	c.d.Pos++ // '['
	dst = append(dst, '[')
	c.d.SkipSpace()
	if c.d.Peek() == ']' {
		c.d.Pos++
		return append(dst, ']'), nil
	}
	for {
		var err error
		if dst, err = c.value(dst, depth); err != nil {
			return dst, err
		}
		c.d.SkipSpace()
		if b := c.d.Peek(); b == ']' {
			c.d.Pos++
			return append(dst, ']'), nil
		} else if b != ',' {
			return dst, c.endOf("array", ']')
		}
		c.d.Pos++
		dst = append(dst, ',')
		c.d.SkipSpace()
	}
}
