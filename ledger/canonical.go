// Package ledger holds the pure logic of the evidence chain: RFC 8785
// canonical JSON, the link hash, verification, the JSONL codec and signed
// checkpoints. It does no I/O; stores call it.
package ledger

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxSafeInteger is 2^53: canonical JSON hashes IEEE doubles, so an integer
// beyond ±2^53 would hash as a different value than the one written.
const MaxSafeInteger = 1 << 53

// maxDepth bounds nesting so hostile input cannot exhaust the stack.
const maxDepth = 512

// SyntaxError says what is wrong with a JSON document and where.
type SyntaxError struct {
	Offset int // byte offset into the document
	Msg    string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("at byte %d: %s", e.Offset, e.Msg) }

// Canonicalize returns the RFC 8785 (JCS) form of the JSON document raw.
// It refuses what cannot be hashed faithfully: invalid JSON or UTF-8,
// duplicate object keys, integers beyond ±2^53, nesting deeper than 512.
func Canonicalize(raw []byte) ([]byte, error) {
	return AppendCanonical(make([]byte, 0, len(raw)), raw)
}

// AppendCanonical appends the canonical form of raw to dst.
func AppendCanonical(dst, raw []byte) ([]byte, error) {
	c := canon{in: raw}
	c.skipSpace()
	out, err := c.value(dst, 0)
	if err != nil {
		return dst, err
	}
	c.skipSpace()
	if c.pos != len(c.in) {
		return dst, c.fail("unexpected data after the JSON value")
	}
	return out, nil
}

// Check reports whether raw is a document Canonicalize accepts.
func Check(raw []byte) error {
	_, err := AppendCanonical(nil, raw)
	return err
}

type canon struct {
	in  []byte
	pos int
	key []byte // scratch for decoded keys
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
	if depth > maxDepth {
		return dst, c.fail("nesting deeper than %d", maxDepth)
	}
	if c.pos >= len(c.in) {
		return dst, c.fail("unexpected end of JSON")
	}
	switch b := c.in[c.pos]; {
	case b == '{':
		return c.object(dst, depth)
	case b == '[':
		return c.array(dst, depth)
	case b == '"':
		s, err := c.str(nil)
		if err != nil {
			return dst, err
		}
		return appendString(dst, s), nil
	case b == 't':
		return c.literal(dst, "true")
	case b == 'f':
		return c.literal(dst, "false")
	case b == 'n':
		return c.literal(dst, "null")
	case b == '-' || (b >= '0' && b <= '9'):
		return c.number(dst)
	default:
		return dst, c.fail("unexpected character %q", b)
	}
}

func (c *canon) literal(dst []byte, lit string) ([]byte, error) {
	if len(c.in)-c.pos < len(lit) || string(c.in[c.pos:c.pos+len(lit)]) != lit {
		return dst, c.fail("invalid literal")
	}
	c.pos += len(lit)
	return append(dst, lit...), nil
}

type member struct {
	key        []byte // decoded key, UTF-8
	start, end int    // canonical value bytes in the scratch buffer
}

func (c *canon) object(dst []byte, depth int) ([]byte, error) {
	c.pos++ // '{'
	c.skipSpace()
	if c.pos < len(c.in) && c.in[c.pos] == '}' {
		c.pos++
		return append(dst, "{}"...), nil
	}
	var members []member
	var vals []byte
	for {
		c.skipSpace()
		if c.pos >= len(c.in) || c.in[c.pos] != '"' {
			return dst, c.fail("expected an object key")
		}
		keyAt := c.pos
		key, err := c.str(nil)
		if err != nil {
			return dst, err
		}
		c.skipSpace()
		if c.pos >= len(c.in) || c.in[c.pos] != ':' {
			return dst, c.fail("expected ':' after object key")
		}
		c.pos++
		c.skipSpace()
		start := len(vals)
		if vals, err = c.value(vals, depth+1); err != nil {
			return dst, err
		}
		for _, m := range members {
			if string(m.key) == string(key) {
				return dst, &SyntaxError{Offset: keyAt, Msg: fmt.Sprintf("duplicate key %q", key)}
			}
		}
		members = append(members, member{key: key, start: start, end: len(vals)})
		c.skipSpace()
		if c.pos >= len(c.in) {
			return dst, c.fail("unexpected end of JSON in object")
		}
		if c.in[c.pos] == ',' {
			c.pos++
			continue
		}
		if c.in[c.pos] != '}' {
			return dst, c.fail("expected ',' or '}' in object")
		}
		c.pos++
		break
	}
	slices.SortFunc(members, func(a, b member) int { return compareUTF16(a.key, b.key) })
	dst = append(dst, '{')
	for i, m := range members {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, m.key)
		dst = append(dst, ':')
		dst = append(dst, vals[m.start:m.end]...)
	}
	return append(dst, '}'), nil
}

func (c *canon) array(dst []byte, depth int) ([]byte, error) {
	c.pos++ // '['
	dst = append(dst, '[')
	c.skipSpace()
	if c.pos < len(c.in) && c.in[c.pos] == ']' {
		c.pos++
		return append(dst, ']'), nil
	}
	for i := 0; ; i++ {
		if i > 0 {
			dst = append(dst, ',')
		}
		c.skipSpace()
		var err error
		if dst, err = c.value(dst, depth+1); err != nil {
			return dst, err
		}
		c.skipSpace()
		if c.pos >= len(c.in) {
			return dst, c.fail("unexpected end of JSON in array")
		}
		if c.in[c.pos] == ',' {
			c.pos++
			continue
		}
		if c.in[c.pos] != ']' {
			return dst, c.fail("expected ',' or ']' in array")
		}
		c.pos++
		return append(dst, ']'), nil
	}
}

// str decodes the string at c.pos (which is '"') and appends it to buf.
func (c *canon) str(buf []byte) ([]byte, error) {
	c.pos++
	for {
		start := c.pos
		for c.pos < len(c.in) {
			b := c.in[c.pos]
			if b == '"' || b == '\\' || b < 0x20 || b >= utf8.RuneSelf {
				break
			}
			c.pos++
		}
		buf = append(buf, c.in[start:c.pos]...)
		if c.pos >= len(c.in) {
			return nil, c.fail("unterminated string")
		}
		switch b := c.in[c.pos]; {
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
		default:
			r, n := utf8.DecodeRune(c.in[c.pos:])
			if r == utf8.RuneError && n <= 1 {
				return nil, c.fail("invalid UTF-8 in string")
			}
			buf = append(buf, c.in[c.pos:c.pos+n]...)
			c.pos += n
		}
	}
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
			r, err = c.lowSurrogate(r)
			if err != nil {
				return nil, err
			}
		}
		return utf8.AppendRune(buf, r), nil
	default:
		c.pos -= 2
		return nil, c.fail("invalid escape \\%c", e)
	}
}

func (c *canon) lowSurrogate(hi rune) (rune, error) {
	if hi >= 0xDC00 || c.pos+1 >= len(c.in) || c.in[c.pos] != '\\' || c.in[c.pos+1] != 'u' {
		return 0, c.fail("lone surrogate in string")
	}
	c.pos += 2
	lo, err := c.hex4()
	if err != nil {
		return 0, err
	}
	r := utf16.DecodeRune(hi, lo)
	if r == utf8.RuneError {
		return 0, c.fail("lone surrogate in string")
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

func (c *canon) number(dst []byte) ([]byte, error) {
	start := c.pos
	if c.in[c.pos] == '-' {
		c.pos++
	}
	if c.pos >= len(c.in) {
		return dst, c.fail("invalid number")
	}
	if c.in[c.pos] == '0' {
		c.pos++
	} else if !c.digits() {
		return dst, c.fail("invalid number")
	}
	if c.pos < len(c.in) && c.in[c.pos] == '.' {
		c.pos++
		if !c.digits() {
			return dst, c.fail("invalid number: digits expected after '.'")
		}
	}
	if c.pos < len(c.in) && (c.in[c.pos] == 'e' || c.in[c.pos] == 'E') {
		c.pos++
		if c.pos < len(c.in) && (c.in[c.pos] == '+' || c.in[c.pos] == '-') {
			c.pos++
		}
		if !c.digits() {
			return dst, c.fail("invalid number: digits expected in exponent")
		}
	}
	lit := c.in[start:c.pos]
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil || math.IsInf(f, 0) {
		return dst, &SyntaxError{Offset: start, Msg: fmt.Sprintf("number %s out of range", lit)}
	}
	if !safeInteger(lit, f) {
		return dst, &SyntaxError{Offset: start, Msg: fmt.Sprintf("integer %s beyond ±2^53 cannot be hashed exactly", lit)}
	}
	return AppendNumber(dst, f), nil
}

// safeInteger reports whether the number literal lit (parsed as f) is not
// an integer beyond ±2^53. A plain integer literal is judged exactly; any
// other notation is judged by its double value, where 2^53 itself is
// already ambiguous.
func safeInteger(lit []byte, f float64) bool {
	if f != math.Trunc(f) {
		return true
	}
	if bytes.IndexAny(lit, ".eE") < 0 {
		n, err := strconv.ParseInt(string(lit), 10, 64)
		return err == nil && n >= -MaxSafeInteger && n <= MaxSafeInteger
	}
	return math.Abs(f) < MaxSafeInteger
}

func (c *canon) digits() bool {
	start := c.pos
	for c.pos < len(c.in) && c.in[c.pos] >= '0' && c.in[c.pos] <= '9' {
		c.pos++
	}
	return c.pos > start
}

// AppendNumber appends f as ECMAScript's Number.prototype.toString would
// print it, as RFC 8785 requires. f must be finite.
func AppendNumber(dst []byte, f float64) []byte {
	if f == 0 {
		return append(dst, '0')
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		if math.Abs(f) <= MaxSafeInteger {
			return strconv.AppendInt(dst, int64(f), 10)
		}
		return strconv.AppendFloat(dst, f, 'f', -1, 64)
	}
	abs := math.Abs(f)
	if abs >= 1e-6 && abs < 1e21 {
		return strconv.AppendFloat(dst, f, 'f', -1, 64)
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, 'e', -1, 64)
	// Go writes e+09 / e-07; ECMAScript writes e+9 / e-7.
	for i := start; i < len(dst); i++ {
		if dst[i] == 'e' && i+2 < len(dst) && dst[i+2] == '0' && i+3 < len(dst) {
			return append(dst[:i+2], dst[i+3:]...)
		}
	}
	return dst
}

// appendString appends s (valid UTF-8) as a JCS string literal.
func appendString(dst, s []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b >= 0x20 && b != '"' && b != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch b {
		case '"', '\\':
			dst = append(dst, '\\', b)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// compareUTF16 orders two UTF-8 strings by their UTF-16 code units, as
// RFC 8785 sorts object keys.
func compareUTF16(a, b []byte) int {
	for len(a) > 0 && len(b) > 0 {
		if a[0] < utf8.RuneSelf && b[0] < utf8.RuneSelf {
			if a[0] != b[0] {
				return int(a[0]) - int(b[0])
			}
			a, b = a[1:], b[1:]
			continue
		}
		ra, na := utf8.DecodeRune(a)
		rb, nb := utf8.DecodeRune(b)
		ua, ub := utf16Units(ra), utf16Units(rb)
		if ua != ub {
			if ua[0] != ub[0] {
				return int(ua[0]) - int(ub[0])
			}
			return int(ua[1]) - int(ub[1])
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

func utf16Units(r rune) [2]uint16 {
	if r >= 0x10000 {
		hi, lo := utf16.EncodeRune(r)
		return [2]uint16{uint16(hi), uint16(lo)}
	}
	return [2]uint16{uint16(r), 0}
}
