package strictjson

import (
	"fmt"
	"math/bits"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth bounds nesting so that hostile input cannot exhaust the stack:
// a document may hold MaxDepth nested objects and arrays, not one more.
const MaxDepth = 512

// SyntaxError says what is wrong with a document and where: the byte
// offset, and the JSON pointer of the value being read when it went wrong
// (Decode collects it; the Reader's primitives leave it empty).
type SyntaxError struct {
	Offset int
	Path   []string // reference tokens, innermost last
	Msg    string
}

// Error implements error.
func (e *SyntaxError) Error() string {
	if len(e.Path) == 0 {
		return fmt.Sprintf("%s at byte %d", e.Msg, e.Offset)
	}
	return fmt.Sprintf("%s at byte %d (in %s)", e.Msg, e.Offset, e.Pointer())
}

// Pointer returns the JSON pointer of the value that failed to decode.
func (e *SyntaxError) Pointer() string { return Pointer(e.Path) }

// DuplicateKey is the error for the object key key repeated at offset at:
// every reader that finds a repeated key, however it finds it, says so in
// these words.
func DuplicateKey(at int, key []byte) *SyntaxError {
	return &SyntaxError{Offset: at, Msg: fmt.Sprintf("duplicate key %q", key)}
}

// Reader reads JSON text at In[Pos:]. Its methods are the only
// implementation of the strict rules: Decode builds a tree with them, and
// a scanner that steps through a document with them (the contract's fast
// path, the ledger's canonicalizer) refuses what Decode refuses. A method
// that fails leaves Pos where it went wrong and returns a *SyntaxError.
type Reader struct {
	In  []byte
	Pos int
	// Exact has Number hold numbers to their spelling and the exponent
	// bound only, for a document read with exact arithmetic alone (see
	// DecodeExact).
	Exact bool
	buf   []byte // scratch for strings with escapes
}

// Reset points d at the start of in, keeping its scratch space.
func (d *Reader) Reset(in []byte) {
	d.In, d.Pos, d.buf = in, 0, d.buf[:0]
}

// Fail returns a *SyntaxError at Pos.
func (d *Reader) Fail(format string, args ...any) *SyntaxError {
	return &SyntaxError{Offset: d.Pos, Msg: fmt.Sprintf(format, args...)}
}

// SkipSpace steps over JSON whitespace.
func (d *Reader) SkipSpace() {
	for d.Pos < len(d.In) {
		switch d.In[d.Pos] {
		case ' ', '\t', '\n', '\r':
			d.Pos++
		default:
			return
		}
	}
}

// Peek returns the byte at Pos, or 0 at the end of the input.
func (d *Reader) Peek() byte {
	if d.Pos < len(d.In) {
		return d.In[d.Pos]
	}
	return 0
}

// End refuses anything but whitespace after the document's value.
func (d *Reader) End() error {
	d.SkipSpace()
	if d.Pos != len(d.In) {
		return d.Fail("unexpected data after the JSON value")
	}
	return nil
}

// Nest refuses an object or array at Pos that would be the depth-th
// nested one (the outermost is the first).
func (d *Reader) Nest(depth int) error {
	if depth <= MaxDepth {
		return nil
	}
	return d.tooDeep()
}

// tooDeep is Nest's refusal, kept out of line so that Nest inlines.
//
//go:noinline
func (d *Reader) tooDeep() error {
	return d.Fail("nesting deeper than %d", MaxDepth)
}

// Unexpected is the error for a byte at Pos that starts no JSON value.
func (d *Reader) Unexpected() *SyntaxError {
	if d.Pos >= len(d.In) {
		return d.Fail("unexpected end of JSON")
	}
	if b := d.In[d.Pos]; b >= utf8.RuneSelf {
		return d.Fail("unexpected non-ASCII byte 0x%02x", b)
	}
	return d.Fail("unexpected character %q", d.In[d.Pos])
}

// Literal reads the literal lit (true, false or null) at Pos.
func (d *Reader) Literal(lit string) error {
	if len(d.In)-d.Pos >= len(lit) && string(d.In[d.Pos:d.Pos+len(lit)]) == lit {
		d.Pos += len(lit)
		return nil
	}
	return d.badLiteral(lit)
}

// badLiteral is Literal's refusal, kept out of line so that Literal
// inlines.
//
//go:noinline
func (d *Reader) badLiteral(lit string) error {
	return d.Fail("invalid literal (expected %s)", lit)
}

// Key reads an object key at Pos, the colon after it and the space around
// them, leaving Pos at the member's value. Its content is as String's.
func (d *Reader) Key(buf []byte) (key []byte, escaped bool, err error) {
	if d.Pos >= len(d.In) || d.In[d.Pos] != '"' {
		return nil, false, d.Fail("expected an object key")
	}
	if key, escaped, err = d.String(buf); err != nil {
		return nil, false, err
	}
	d.SkipSpace()
	if d.Pos >= len(d.In) || d.In[d.Pos] != ':' {
		return nil, false, d.Fail("expected ':' after object key %q", key)
	}
	d.Pos++
	d.SkipSpace()
	return key, escaped, nil
}

// StringBytes reads the string at Pos (which is '"') and returns its
// content: a slice of the input when it has no escapes, else scratch
// space that the next string read overwrites.
func (d *Reader) StringBytes() ([]byte, error) {
	s, escaped, err := d.String(d.buf[:0])
	if escaped {
		d.buf = s[:0]
	}
	return s, err
}

// String reads the string at Pos (which is '"'): valid UTF-8, no control
// characters, escapes that JSON defines and no unpaired surrogate. Without
// escapes it returns a slice of the input and escaped == false; otherwise
// it appends the decoded content to buf and returns that.
func (d *Reader) String(buf []byte) (s []byte, escaped bool, err error) {
	d.Pos++
	start := d.Pos
	for {
		d.Pos += PlainPrefix(d.In[d.Pos:])
		if d.Pos >= len(d.In) {
			return nil, false, d.Fail("unterminated string")
		}
		switch b := d.In[d.Pos]; {
		case b == '"':
			d.Pos++
			return d.In[start : d.Pos-1], false, nil
		case b == '\\':
			s, err := d.escaped(append(buf, d.In[start:d.Pos]...))
			return s, true, err
		case b < 0x20:
			return nil, false, d.Fail("control character 0x%02x in string", b)
		default:
			if err := d.utf8Rune(); err != nil {
				return nil, false, err
			}
		}
	}
}

// PlainPrefix returns the length of the longest prefix of s made of
// printable ASCII other than '"' and '\\': bytes a string literal holds
// as they are, and that a canonical string holds unescaped. It tests
// eight bytes at a time, since most of a JSON document is such bytes.
func PlainPrefix[S ~string | ~[]byte](s S) int {
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

// utf8Rune steps over one multi-byte UTF-8 sequence at Pos.
func (d *Reader) utf8Rune() error {
	r, n := utf8.DecodeRune(d.In[d.Pos:])
	if r == utf8.RuneError && n <= 1 {
		return d.Fail("invalid UTF-8 in string")
	}
	d.Pos += n
	return nil
}

// escaped finishes, into buf, a string whose first escape is at Pos.
func (d *Reader) escaped(buf []byte) ([]byte, error) {
	for d.Pos < len(d.In) {
		b := d.In[d.Pos]
		switch {
		case b == '"':
			d.Pos++
			return buf, nil
		case b == '\\':
			var err error
			if buf, err = d.escape(buf); err != nil {
				return nil, err
			}
		case b < 0x20:
			return nil, d.Fail("control character 0x%02x in string", b)
		case b < utf8.RuneSelf:
			n := PlainPrefix(d.In[d.Pos:]) // at least 1: b is plain
			buf = append(buf, d.In[d.Pos:d.Pos+n]...)
			d.Pos += n
		default:
			at := d.Pos
			if err := d.utf8Rune(); err != nil {
				return nil, err
			}
			buf = append(buf, d.In[at:d.Pos]...)
		}
	}
	return nil, d.Fail("unterminated string")
}

func (d *Reader) escape(buf []byte) ([]byte, error) {
	if d.Pos+1 >= len(d.In) {
		return nil, d.Fail("unterminated escape")
	}
	switch e := d.In[d.Pos+1]; e {
	case '"', '\\', '/':
		d.Pos += 2
		return append(buf, e), nil
	case 'b', 'f', 'n', 'r', 't':
		d.Pos += 2
		return append(buf, "\b\f\n\r\t"[strings.IndexByte("bfnrt", e)]), nil
	case 'u':
		r, err := d.unicode()
		if err != nil {
			return nil, err
		}
		return utf8.AppendRune(buf, r), nil
	default:
		return nil, d.Fail("invalid escape \\%c", e)
	}
}

// unicode reads a \uXXXX escape at Pos, and its low half when it is a
// high surrogate. An unpaired surrogate is refused: it is not a character.
func (d *Reader) unicode() (rune, error) {
	at := d.Pos
	r, err := d.hex4()
	if err != nil || !utf16.IsSurrogate(r) {
		return r, err
	}
	if r < 0xDC00 && d.Pos+1 < len(d.In) && d.In[d.Pos] == '\\' && d.In[d.Pos+1] == 'u' {
		lo, err := d.hex4()
		if err != nil {
			return 0, err
		}
		if r = utf16.DecodeRune(r, lo); r != utf8.RuneError {
			return r, nil
		}
	}
	return 0, &SyntaxError{Offset: at, Msg: "unpaired surrogate escape in string"}
}

// hex4 reads "\uXXXX" at Pos.
func (d *Reader) hex4() (rune, error) {
	if d.Pos+6 > len(d.In) {
		return 0, d.Fail("short \\u escape")
	}
	var r rune
	for _, b := range d.In[d.Pos+2 : d.Pos+6] {
		r <<= 4
		switch {
		case b >= '0' && b <= '9':
			r |= rune(b - '0')
		case b >= 'a' && b <= 'f':
			r |= rune(b - 'a' + 10)
		case b >= 'A' && b <= 'F':
			r |= rune(b - 'A' + 10)
		default:
			return 0, d.Fail("invalid \\u escape")
		}
	}
	d.Pos += 6
	return r, nil
}

// Pointer renders reference tokens as a JSON pointer (RFC 6901).
func Pointer(tokens []string) string {
	var sb strings.Builder
	for _, t := range tokens {
		sb.WriteByte('/')
		sb.WriteString(EscapeToken(t))
	}
	return sb.String()
}

// EscapeToken escapes one reference token: "~" as "~0", "/" as "~1".
func EscapeToken(t string) string {
	if !strings.ContainsAny(t, "~/") {
		return t
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(t)
}
