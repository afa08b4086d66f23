package ledger

import (
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/custody-dev/custody/internal/strictjson"
)

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
		n := strictjson.PlainPrefix(s)
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
		n := strictjson.PlainPrefix(s)
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
