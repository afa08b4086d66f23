// Package strictjson is the strict JSON decoder the contract registry
// and its fast path share: one document, valid UTF-8, no duplicate
// object keys, no unpaired surrogate escapes, nesting of at most
// MaxDepth and number exponents of at most four significant digits. Its
// Reader exposes the readers for strings, numbers and literals, so that
// a scanner built on them refuses exactly what Decode refuses.
package strictjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth bounds nesting so that hostile input cannot exhaust the stack.
// It matches the ledger's bound, so a document the registry accepts is
// never refused later for its depth.
const MaxDepth = 512

// SyntaxError says what is wrong with a document and where: the byte
// offset, and the JSON pointer of the value being read when it went wrong.
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

// Decode parses raw as exactly one JSON document into the value tree the
// validator expects: map[string]any, []any, json.Number, string, bool and
// nil. Unlike encoding/json it refuses duplicate object keys, invalid
// UTF-8, unpaired surrogate escapes and nesting deeper than MaxDepth, all
// in the same single pass that builds the tree. Every error is a
// *SyntaxError.
func Decode(raw []byte) (any, error) {
	d := Reader{In: raw}
	d.SkipSpace()
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	d.SkipSpace()
	if d.Pos != len(d.In) {
		return nil, d.fail("unexpected data after the JSON value")
	}
	return v, nil
}

// Reader reads JSON text at In[Pos:]. Decode builds a tree with it; a
// scanner may step through a document with its readers, which refuse
// what Decode refuses. The success path keeps no record of where it is:
// an error collects its JSON pointer on the way back up.
type Reader struct {
	In  []byte
	Pos int
	buf []byte // scratch for strings with escapes
}

// Reset points d at the start of in, keeping its scratch space.
func (d *Reader) Reset(in []byte) {
	d.In, d.Pos, d.buf = in, 0, d.buf[:0]
}

func (d *Reader) fail(format string, args ...any) *SyntaxError {
	return &SyntaxError{Offset: d.Pos, Msg: fmt.Sprintf(format, args...)}
}

// within prefixes the pointer of err with token, as the error travels out
// of the container that holds the failing value.
func within(err error, token string) error {
	if e, ok := err.(*SyntaxError); ok {
		e.Path = append([]string{token}, e.Path...)
	}
	return err
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

func (d *Reader) value(depth int) (any, error) {
	if d.Pos >= len(d.In) {
		return nil, d.fail("unexpected end of JSON")
	}
	switch b := d.In[d.Pos]; {
	case b == '{':
		return d.object(depth + 1)
	case b == '[':
		return d.array(depth + 1)
	case b == '"':
		return d.str()
	case b == 't':
		return true, d.Literal("true")
	case b == 'f':
		return false, d.Literal("false")
	case b == 'n':
		return nil, d.Literal("null")
	case b == '-' || (b >= '0' && b <= '9'):
		return d.number()
	case b >= utf8.RuneSelf:
		return nil, d.fail("unexpected non-ASCII byte 0x%02x", b)
	default:
		return nil, d.fail("unexpected character %q", b)
	}
}

// Literal reads the literal lit (true, false or null) at Pos.
func (d *Reader) Literal(lit string) error {
	if len(d.In)-d.Pos < len(lit) || string(d.In[d.Pos:d.Pos+len(lit)]) != lit {
		return d.fail("invalid literal (expected %s)", lit)
	}
	d.Pos += len(lit)
	return nil
}

func (d *Reader) object(depth int) (any, error) {
	if depth > MaxDepth {
		return nil, d.fail("nesting deeper than %d", MaxDepth)
	}
	d.Pos++ // '{'
	obj := make(map[string]any)
	d.SkipSpace()
	if d.Pos < len(d.In) && d.In[d.Pos] == '}' {
		d.Pos++
		return obj, nil
	}
	for {
		if err := d.member(obj, depth); err != nil {
			return nil, err
		}
		d.SkipSpace()
		if d.Pos >= len(d.In) {
			return nil, d.fail("unexpected end of JSON in object")
		}
		switch d.In[d.Pos] {
		case ',':
			d.Pos++
		case '}':
			d.Pos++
			return obj, nil
		default:
			return nil, d.fail("expected ',' or '}' in object")
		}
	}
}

// member reads one "key": value pair into obj.
func (d *Reader) member(obj map[string]any, depth int) error {
	d.SkipSpace()
	if d.Pos >= len(d.In) || d.In[d.Pos] != '"' {
		return d.fail("expected an object key")
	}
	keyAt := d.Pos
	key, err := d.str()
	if err != nil {
		return err
	}
	if _, dup := obj[key]; dup {
		return &SyntaxError{Offset: keyAt, Msg: fmt.Sprintf("duplicate key %q", key)}
	}
	d.SkipSpace()
	if d.Pos >= len(d.In) || d.In[d.Pos] != ':' {
		return d.fail("expected ':' after object key %q", key)
	}
	d.Pos++
	d.SkipSpace()
	v, err := d.value(depth)
	if err != nil {
		return within(err, key)
	}
	obj[key] = v
	return nil
}

func (d *Reader) array(depth int) (any, error) {
	if depth > MaxDepth {
		return nil, d.fail("nesting deeper than %d", MaxDepth)
	}
	d.Pos++ // '['
	arr := make([]any, 0, 4)
	d.SkipSpace()
	if d.Pos < len(d.In) && d.In[d.Pos] == ']' {
		d.Pos++
		return arr, nil
	}
	for {
		d.SkipSpace()
		v, err := d.value(depth)
		if err != nil {
			return nil, within(err, fmt.Sprint(len(arr)))
		}
		arr = append(arr, v)
		d.SkipSpace()
		if d.Pos >= len(d.In) {
			return nil, d.fail("unexpected end of JSON in array")
		}
		switch d.In[d.Pos] {
		case ',':
			d.Pos++
		case ']':
			d.Pos++
			return arr, nil
		default:
			return nil, d.fail("expected ',' or ']' in array")
		}
	}
}

// str reads the string at d.Pos (which is '"'). A string without escapes
// is copied once, straight from the input.
func (d *Reader) str() (string, error) {
	b, err := d.StringBytes()
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// StringBytes reads the string at Pos (which is '"') and returns its
// content: a slice of the input when it has no escapes, else scratch
// space that the next string read overwrites.
func (d *Reader) StringBytes() ([]byte, error) {
	d.Pos++
	start := d.Pos
	for d.Pos < len(d.In) {
		b := d.In[d.Pos]
		switch {
		case b == '"':
			s := d.In[start:d.Pos]
			d.Pos++
			return s, nil
		case b == '\\':
			return d.escaped(start)
		case b < 0x20:
			return nil, d.fail("control character 0x%02x in string", b)
		case b < utf8.RuneSelf:
			d.Pos++
		default:
			if err := d.utf8Rune(); err != nil {
				return nil, err
			}
		}
	}
	return nil, d.fail("unterminated string")
}

// utf8Rune steps over one multi-byte UTF-8 sequence at d.Pos.
func (d *Reader) utf8Rune() error {
	r, n := utf8.DecodeRune(d.In[d.Pos:])
	if r == utf8.RuneError && n <= 1 {
		return d.fail("invalid UTF-8 in string")
	}
	d.Pos += n
	return nil
}

// escaped finishes a string that holds escapes; start is where its
// content began.
func (d *Reader) escaped(start int) ([]byte, error) {
	buf := append(d.buf[:0], d.In[start:d.Pos]...)
	for d.Pos < len(d.In) {
		b := d.In[d.Pos]
		switch {
		case b == '"':
			d.Pos++
			d.buf = buf
			return buf, nil
		case b == '\\':
			var err error
			if buf, err = d.escape(buf); err != nil {
				return nil, err
			}
		case b < 0x20:
			return nil, d.fail("control character 0x%02x in string", b)
		case b < utf8.RuneSelf:
			buf = append(buf, b)
			d.Pos++
		default:
			at := d.Pos
			if err := d.utf8Rune(); err != nil {
				return nil, err
			}
			buf = append(buf, d.In[at:d.Pos]...)
		}
	}
	return nil, d.fail("unterminated string")
}

func (d *Reader) escape(buf []byte) ([]byte, error) {
	if d.Pos+1 >= len(d.In) {
		return nil, d.fail("unterminated escape")
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
		return nil, d.fail("invalid escape \\%c", e)
	}
}

// unicode reads a \uXXXX escape at d.Pos, and its low half when it is a
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

// hex4 reads "\uXXXX" at d.Pos.
func (d *Reader) hex4() (rune, error) {
	if d.Pos+6 > len(d.In) {
		return 0, d.fail("short \\u escape")
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
			return 0, d.fail("invalid \\u escape")
		}
	}
	d.Pos += 6
	return r, nil
}

// number reads a number literal and keeps its exact text: json.Number
// preserves the precision of large integers and long fractions.
func (d *Reader) number() (any, error) {
	lit, err := d.NumberBytes()
	if err != nil {
		return nil, err
	}
	return json.Number(lit), nil
}

// NumberBytes reads a number literal at Pos (which is '-' or a digit)
// and returns it, a slice of the input.
func (d *Reader) NumberBytes() ([]byte, error) {
	start := d.Pos
	if d.In[d.Pos] == '-' {
		d.Pos++
	}
	switch {
	case d.Pos < len(d.In) && d.In[d.Pos] == '0':
		d.Pos++
	case !d.digits():
		return nil, d.fail("invalid number: digit expected")
	}
	if d.Pos < len(d.In) && d.In[d.Pos] == '.' {
		d.Pos++
		if !d.digits() {
			return nil, d.fail("invalid number: digit expected after '.'")
		}
	}
	if d.Pos < len(d.In) && (d.In[d.Pos] == 'e' || d.In[d.Pos] == 'E') {
		d.Pos++
		if d.Pos < len(d.In) && (d.In[d.Pos] == '+' || d.In[d.Pos] == '-') {
			d.Pos++
		}
		expAt := d.Pos
		if !d.digits() {
			return nil, d.fail("invalid number: digit expected in exponent")
		}
		// No document needs an exponent of five significant digits, and
		// exact arithmetic on one would cost unbounded time and memory.
		// Leading zeros change nothing: 0E00000 is zero.
		if len(bytes.TrimLeft(d.In[expAt:d.Pos], "0")) > maxExponentDigits {
			d.Pos = start
			return nil, d.fail("number exponent out of range: at most %d digits", maxExponentDigits)
		}
	}
	return d.In[start:d.Pos], nil
}

// maxExponentDigits bounds a number's exponent, in significant digits:
// 1e9999 is already far beyond any double.
const maxExponentDigits = 4

func (d *Reader) digits() bool {
	start := d.Pos
	for d.Pos < len(d.In) && d.In[d.Pos] >= '0' && d.In[d.Pos] <= '9' {
		d.Pos++
	}
	return d.Pos > start
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
