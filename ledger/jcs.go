package ledger

import (
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// number appends the canonical form of the number literal at c.pos.
//
// Canonical JSON hashes IEEE doubles, so an integer beyond ±2^53 would
// hash as another value than the one written: an integer literal beyond
// ±2^53 is refused, whatever its spelling. A literal with a fraction or an
// exponent is a double by its own spelling and is accepted anywhere in
// range, as RFC 8785 requires (1E30 becomes 1e+30), except where its
// canonical form would be such an integer literal (an integral value
// between 2^53 and 10^21, e.g. 1e20): every canonical form is therefore
// accepted again, and none holds an integer a reader could take for
// another.
func (c *canon) number(dst []byte) ([]byte, error) {
	start := c.pos
	neg := c.in[c.pos] == '-'
	if neg {
		c.pos++
	}
	if err := c.intPart(); err != nil {
		return dst, err
	}
	intEnd := c.pos
	if err := c.fracExp(); err != nil {
		return dst, err
	}
	lit := c.in[start:c.pos]
	if c.pos == intEnd {
		return appendInteger(dst, lit, neg, start)
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil || math.IsInf(f, 0) {
		return dst, &SyntaxError{Offset: start, Msg: fmt.Sprintf("number %s is beyond the range of a double", lit)}
	}
	if abs := math.Abs(f); abs > MaxSafeInteger && abs < 1e21 && f == math.Trunc(f) {
		return dst, &SyntaxError{Offset: start, Msg: fmt.Sprintf("number %s is an integer beyond ±2^53 that cannot be hashed exactly", lit)}
	}
	return AppendNumber(dst, f), nil
}

// intPart steps over the integer digits of a number: one '0' or a
// nonzero digit followed by digits.
func (c *canon) intPart() error {
	if c.pos >= len(c.in) || c.in[c.pos] < '0' || c.in[c.pos] > '9' {
		return c.fail("invalid number")
	}
	if c.in[c.pos] == '0' {
		c.pos++
		return nil
	}
	c.digits()
	return nil
}

// fracExp steps over an optional fraction and exponent.
func (c *canon) fracExp() error {
	if c.pos < len(c.in) && c.in[c.pos] == '.' {
		c.pos++
		if !c.digits() {
			return c.fail("invalid number: digits expected after '.'")
		}
	}
	if c.pos < len(c.in) && (c.in[c.pos] == 'e' || c.in[c.pos] == 'E') {
		c.pos++
		if c.pos < len(c.in) && (c.in[c.pos] == '+' || c.in[c.pos] == '-') {
			c.pos++
		}
		if !c.digits() {
			return c.fail("invalid number: digits expected in exponent")
		}
	}
	return nil
}

func (c *canon) digits() bool {
	start := c.pos
	for c.pos < len(c.in) && c.in[c.pos] >= '0' && c.in[c.pos] <= '9' {
		c.pos++
	}
	return c.pos > start
}

// appendInteger appends a JSON integer literal, which within ±2^53 is its
// own canonical form (JSON forbids leading zeros) except for -0.
func appendInteger(dst, lit []byte, neg bool, at int) ([]byte, error) {
	digits := len(lit)
	if neg {
		digits--
	}
	if digits == 1 && neg && lit[1] == '0' {
		return append(dst, '0'), nil
	}
	if digits <= 15 { // below 10^15 < 2^53
		return append(dst, lit...), nil
	}
	if n, err := strconv.ParseInt(string(lit), 10, 64); err == nil && n >= -MaxSafeInteger && n <= MaxSafeInteger {
		return append(dst, lit...), nil
	}
	return dst, &SyntaxError{Offset: at, Msg: fmt.Sprintf("integer %s beyond ±2^53 cannot be hashed exactly", lit)}
}

// AppendNumber appends f as ECMAScript's Number.prototype.toString would
// print it, as RFC 8785 requires. f must be finite.
func AppendNumber(dst []byte, f float64) []byte {
	abs := math.Abs(f)
	switch {
	case f == 0: // and -0
		return append(dst, '0')
	case abs <= MaxSafeInteger && f == math.Trunc(f):
		return strconv.AppendInt(dst, int64(f), 10)
	case abs >= 1e-6 && abs < 1e21:
		return strconv.AppendFloat(dst, f, 'f', -1, 64)
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, 'e', -1, 64)
	// Go writes e+09 and e-07; ECMAScript writes e+9 and e-7.
	for i := len(dst) - 1; i > start; i-- {
		if dst[i] == 'e' {
			if len(dst)-i == 4 && dst[i+2] == '0' {
				dst = append(dst[:i+2], dst[i+3])
			}
			break
		}
	}
	return dst
}

// appendString appends s (valid UTF-8) as an RFC 8785 string literal:
// only '"', '\\' and control characters are escaped, the short forms where
// JSON has them.
func appendString[S ~string | ~[]byte](dst []byte, s S) []byte {
	dst = append(dst, '"')
	for {
		n := plainPrefix(s)
		dst = append(dst, s[:n]...)
		s = s[n:]
		if len(s) == 0 {
			return append(dst, '"')
		}
		if s[0] < utf8.RuneSelf {
			dst = appendEscape(dst, s[0])
			s = s[1:]
			continue
		}
		for n = 1; n < len(s) && s[n] >= utf8.RuneSelf; n++ {
		}
		dst = append(dst, s[:n]...) // as is, valid or not
		s = s[n:]
	}
}

// appendValidString is appendString for s that may not be valid UTF-8: it
// reports false, having written part of s, when it is not.
func appendValidString[S ~string | ~[]byte](dst []byte, s S) ([]byte, bool) {
	dst = append(dst, '"')
	for {
		n := plainPrefix(s)
		dst = append(dst, s[:n]...)
		s = s[n:]
		if len(s) == 0 {
			return append(dst, '"'), true
		}
		if s[0] < utf8.RuneSelf {
			dst = appendEscape(dst, s[0])
			s = s[1:]
			continue
		}
		r, size := utf8.DecodeRuneInString(string(s[:min(len(s), utf8.UTFMax)]))
		if r == utf8.RuneError && size <= 1 {
			return dst, false
		}
		dst = append(dst, s[:size]...)
		s = s[size:]
	}
}

// appendEscape appends the escape of b: '"', '\\' or a control character.
func appendEscape(dst []byte, b byte) []byte {
	const hex = "0123456789abcdef"
	switch b {
	case '"', '\\':
		return append(dst, '\\', b)
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	return append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
}

// compareUTF16 orders two UTF-8 strings by their UTF-16 code units, as
// RFC 8785 sorts object keys. UTF-8 byte order is code point order, which
// differs from UTF-16 order only where a supplementary character (a
// surrogate pair, 0xD800-0xDBFF first) meets one of U+E000-U+FFFF; so
// bytes are compared and only the first differing character is decoded.
func compareUTF16[S ~string | ~[]byte](a, b S) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) - len(b)
	}
	if a[i] < utf8.RuneSelf && b[i] < utf8.RuneSelf {
		return int(a[i]) - int(b[i])
	}
	for i > 0 && !utf8.RuneStart(a[i]) {
		i-- // back to the start of the character both share a prefix of
	}
	ra, _ := utf8.DecodeRuneInString(string(a[i:min(len(a), i+utf8.UTFMax)]))
	rb, _ := utf8.DecodeRuneInString(string(b[i:min(len(b), i+utf8.UTFMax)]))
	return utf16Key(ra) - utf16Key(rb)
}

// utf16Key maps r to a number that orders like its UTF-16 encoding.
func utf16Key(r rune) int {
	if r >= 0x10000 {
		hi, lo := utf16.EncodeRune(r)
		return int(hi)<<16 | int(lo)
	}
	return int(r) << 16
}
