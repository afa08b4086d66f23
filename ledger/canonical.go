package ledger

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxSafeInteger is 2^53, the largest of the range of integers a double
// holds without gaps. RFC 8785 hashes doubles, so an integer literal
// beyond ±2^53 is refused unless it already is the canonical spelling of
// a double: 9007199254740993 would hash like 9007199254740992, and an
// approval for one would authorise the other.
const MaxSafeInteger = 1 << 53

// maxDepth bounds nesting so hostile input cannot exhaust the stack.
const maxDepth = 512

// SyntaxError says what is wrong with a JSON document and where.
type SyntaxError struct {
	Offset int // byte offset into the document
	Msg    string
}

// Error returns the message prefixed with the byte offset.
func (e *SyntaxError) Error() string { return fmt.Sprintf("at byte %d: %s", e.Offset, e.Msg) }

// Canonicalize returns the RFC 8785 (JCS) form of the JSON document raw.
// It refuses what cannot be hashed faithfully: invalid JSON or UTF-8, lone
// surrogates, duplicate object keys, integer literals a double would round
// (see MaxSafeInteger), numbers beyond the range of a double, nesting
// deeper than 512. The error is a *SyntaxError.
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

// Check reports whether raw is a document Canonicalize accepts.
func Check(raw []byte) error {
	_, err := Canonicalize(raw)
	return err
}

// canon is the state of one canonicalization. Its buffers survive between
// documents, so a long-lived canon (in a Verifier, say) stops allocating
// once it has seen the largest document.
type canon struct {
	in  []byte
	pos int
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
	c.in, c.pos, c.members = raw, 0, c.members[:0]
	mark := len(dst)
	c.skipSpace()
	out, err := c.value(dst, 0)
	if err == nil {
		c.skipSpace()
		if c.pos != len(c.in) {
			err = c.fail("unexpected data after the JSON value")
		}
	}
	c.in = nil
	if err != nil {
		return dst[:mark], err
	}
	return out, nil
}

func (c *canon) fail(format string, args ...any) error {
	return &SyntaxError{Offset: c.pos, Msg: fmt.Sprintf(format, args...)}
}

func (c *canon) skipSpace() {
	for c.pos < len(c.in) {
		switch c.in[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *canon) value(dst []byte, depth int) ([]byte, error) {
	if c.pos >= len(c.in) {
		return dst, c.fail("unexpected end of JSON")
	}
	switch b := c.in[c.pos]; {
	case b == '"':
		return c.stringValue(dst)
	case b == '-' || (b >= '0' && b <= '9'):
		return c.number(dst)
	case b == '{':
		if depth >= maxDepth {
			return dst, c.fail("nesting deeper than %d", maxDepth)
		}
		return c.object(dst, depth)
	case b == '[':
		if depth >= maxDepth {
			return dst, c.fail("nesting deeper than %d", maxDepth)
		}
		return c.array(dst, depth)
	case b == 't':
		return c.literal(dst, "true")
	case b == 'f':
		return c.literal(dst, "false")
	case b == 'n':
		return c.literal(dst, "null")
	default:
		return dst, c.fail("unexpected character %q", b)
	}
}

func (c *canon) literal(dst []byte, lit string) ([]byte, error) {
	if err := c.expectLiteral(lit); err != nil {
		return dst, err
	}
	return append(dst, lit...), nil
}

func (c *canon) expectLiteral(lit string) error {
	if len(c.in)-c.pos < len(lit) || string(c.in[c.pos:c.pos+len(lit)]) != lit {
		return c.fail("invalid literal")
	}
	c.pos += len(lit)
	return nil
}

// stringValue appends the canonical form of the string literal at c.pos.
// A literal without escapes is already canonical and is copied as is.
func (c *canon) stringValue(dst []byte) ([]byte, error) {
	start := c.pos
	s, escaped, err := c.str(c.sbuf[:0])
	if err != nil {
		return dst, err
	}
	if !escaped {
		return append(dst, c.in[start:c.pos]...), nil
	}
	c.sbuf = s
	return appendString(dst, s), nil
}

func (c *canon) object(dst []byte, depth int) ([]byte, error) {
	open := len(dst)
	dst = append(dst, '{')
	c.pos++
	c.skipSpace()
	if c.pos < len(c.in) && c.in[c.pos] == '}' {
		c.pos++
		return append(dst, '}'), nil
	}
	base := len(c.members)
	for {
		var err error
		if dst, err = c.member(dst, depth); err != nil {
			return dst, err
		}
		c.skipSpace()
		if c.pos >= len(c.in) {
			return dst, c.fail("unexpected end of JSON in object")
		}
		if c.in[c.pos] == '}' {
			c.pos++
			break
		}
		if c.in[c.pos] != ',' {
			return dst, c.fail("expected ',' or '}' in object")
		}
		c.pos++
		dst = append(dst, ',')
		c.skipSpace()
	}
	dst, err := c.order(dst, open, c.members[base:])
	c.members = c.members[:base]
	if err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}

// member appends one `"key":value` in canonical form and pushes it on the
// member stack.
func (c *canon) member(dst []byte, depth int) ([]byte, error) {
	if c.pos >= len(c.in) || c.in[c.pos] != '"' {
		return dst, c.fail("expected an object key")
	}
	keyAt, start := c.pos, len(dst)
	key, escaped, err := c.str(nil)
	if err != nil {
		return dst, err
	}
	if escaped {
		dst = appendString(dst, key)
	} else {
		dst = append(dst, c.in[keyAt:c.pos]...)
	}
	c.skipSpace()
	if c.pos >= len(c.in) || c.in[c.pos] != ':' {
		return dst, c.fail("expected ':' after object key")
	}
	c.pos++
	c.skipSpace()
	dst = append(dst, ':')
	if dst, err = c.value(dst, depth+1); err != nil {
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
	return &SyntaxError{Offset: dup.keyAt, Msg: fmt.Sprintf("duplicate key %q", dup.key)}
}

func (c *canon) array(dst []byte, depth int) ([]byte, error) {
	c.pos++ // '['
	dst = append(dst, '[')
	c.skipSpace()
	if c.pos < len(c.in) && c.in[c.pos] == ']' {
		c.pos++
		return append(dst, ']'), nil
	}
	for {
		var err error
		if dst, err = c.value(dst, depth+1); err != nil {
			return dst, err
		}
		c.skipSpace()
		if c.pos >= len(c.in) {
			return dst, c.fail("unexpected end of JSON in array")
		}
		if c.in[c.pos] == ']' {
			c.pos++
			return append(dst, ']'), nil
		}
		if c.in[c.pos] != ',' {
			return dst, c.fail("expected ',' or ']' in array")
		}
		c.pos++
		dst = append(dst, ',')
		c.skipSpace()
	}
}

// str decodes the string literal at c.pos (which is '"'). Without escapes
// it returns a slice of the input and escaped == false; otherwise the
// decoded bytes are appended to buf.
func (c *canon) str(buf []byte) (s []byte, escaped bool, err error) {
	c.pos++
	start := c.pos
	for {
		c.pos += plainPrefix(c.in[c.pos:])
		if c.pos >= len(c.in) {
			return nil, false, c.fail("unterminated string")
		}
		switch b := c.in[c.pos]; {
		case b == '"':
			c.pos++
			return c.in[start : c.pos-1], false, nil
		case b == '\\':
			s, err := c.strEscaped(append(buf, c.in[start:c.pos]...))
			return s, true, err
		case b < 0x20:
			return nil, false, c.fail("control character in string")
		default:
			if err := c.rune(); err != nil {
				return nil, false, err
			}
		}
	}
}

// plainPrefix returns the length of the longest prefix of s made of
// printable ASCII other than '"' and '\\': bytes a string literal holds
// as they are. It tests eight bytes at a time, since most of a JSON
// document is such bytes.
func plainPrefix[S ~string | ~[]byte](s S) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for i < len(s) {
		if i+8 <= len(s) {
			x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			// A byte below 0x20, equal to '"' or '\\', or at or above 0x80
			// sets its high bit in t; borrows only travel upwards from
			// such a byte, so a clear t means eight plain bytes.
			t := ((x - ones*0x20) | ((x ^ ones*'"') - ones) | ((x ^ ones*'\\') - ones) | x) & highs
			if t == 0 {
				i += 8
				continue
			}
			// No borrow reaches the lowest flagged byte: it is the
			// first byte that is not plain.
			return i + bits.TrailingZeros64(t)/8
		}
		if b := s[i]; b < 0x20 || b == '"' || b == '\\' || b >= utf8.RuneSelf {
			return i
		}
		i++
	}
	return i
}

// rune steps over the multi-byte UTF-8 sequence at c.pos.
func (c *canon) rune() error {
	r, n := utf8.DecodeRune(c.in[c.pos:])
	if r == utf8.RuneError && n <= 1 {
		return c.fail("invalid UTF-8 in string")
	}
	c.pos += n
	return nil
}

// strEscaped decodes the rest of a string that holds escapes.
func (c *canon) strEscaped(buf []byte) ([]byte, error) {
	for c.pos < len(c.in) {
		b := c.in[c.pos]
		switch {
		case b == '"':
			c.pos++
			return buf, nil
		case b == '\\':
			var err error
			if buf, err = c.escape(buf); err != nil {
				return nil, err
			}
		case b < 0x20:
			return nil, c.fail("control character in string")
		case b < utf8.RuneSelf:
			buf = append(buf, b)
			c.pos++
		default:
			start := c.pos
			if err := c.rune(); err != nil {
				return nil, err
			}
			buf = append(buf, c.in[start:c.pos]...)
		}
	}
	return nil, c.fail("unterminated string")
}

func (c *canon) escape(buf []byte) ([]byte, error) {
	if c.pos+1 >= len(c.in) {
		return nil, c.fail("unterminated escape")
	}
	e := c.in[c.pos+1]
	c.pos += 2
	switch e {
	case '"', '\\', '/':
		return append(buf, e), nil
	case 'b':
		return append(buf, '\b'), nil
	case 'f':
		return append(buf, '\f'), nil
	case 'n':
		return append(buf, '\n'), nil
	case 'r':
		return append(buf, '\r'), nil
	case 't':
		return append(buf, '\t'), nil
	case 'u':
		r, err := c.hex4()
		if err != nil {
			return nil, err
		}
		if utf16.IsSurrogate(r) {
			if r, err = c.lowSurrogate(r); err != nil {
				return nil, err
			}
		}
		return utf8.AppendRune(buf, r), nil
	default:
		c.pos -= 2
		return nil, c.fail("invalid escape \\%c", e)
	}
}

// lowSurrogate reads the \uXXXX that must follow the high surrogate hi.
func (c *canon) lowSurrogate(hi rune) (rune, error) {
	at := c.pos - 6
	if hi >= 0xDC00 || c.pos+1 >= len(c.in) || c.in[c.pos] != '\\' || c.in[c.pos+1] != 'u' {
		return 0, &SyntaxError{Offset: at, Msg: "lone surrogate in string"}
	}
	c.pos += 2
	lo, err := c.hex4()
	if err != nil {
		return 0, err
	}
	r := utf16.DecodeRune(hi, lo)
	if r == utf8.RuneError {
		return 0, &SyntaxError{Offset: at, Msg: "lone surrogate in string"}
	}
	return r, nil
}

func (c *canon) hex4() (rune, error) {
	if c.pos+4 > len(c.in) {
		return 0, c.fail("short \\u escape")
	}
	var r rune
	for _, b := range c.in[c.pos : c.pos+4] {
		r <<= 4
		switch {
		case b >= '0' && b <= '9':
			r |= rune(b - '0')
		case b >= 'a' && b <= 'f':
			r |= rune(b - 'a' + 10)
		case b >= 'A' && b <= 'F':
			r |= rune(b - 'A' + 10)
		default:
			return 0, c.fail("invalid \\u escape")
		}
	}
	c.pos += 4
	return r, nil
}
