package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds nesting so that hostile input cannot exhaust the stack.
// It matches the ledger's bound, so a document the registry accepts is
// never refused later for its depth.
const maxDepth = 512

// decodeError says what is wrong with a document and where: the byte
// offset, and the JSON pointer of the value being read when it went wrong.
type decodeError struct {
	Offset int
	Path   []string // reference tokens, innermost last
	Msg    string
}

// Error implements error.
func (e *decodeError) Error() string {
	if len(e.Path) == 0 {
		return fmt.Sprintf("%s at byte %d", e.Msg, e.Offset)
	}
	return fmt.Sprintf("%s at byte %d (in %s)", e.Msg, e.Offset, e.Pointer())
}

// Pointer returns the JSON pointer of the value that failed to decode.
func (e *decodeError) Pointer() string { return pointer(e.Path) }

// decode parses raw as exactly one JSON document into the value tree the
// validator expects: map[string]any, []any, json.Number, string, bool and
// nil. Unlike encoding/json it refuses duplicate object keys, invalid
// UTF-8, unpaired surrogate escapes and nesting deeper than maxDepth, all
// in the same single pass that builds the tree.
func decode(raw []byte) (any, error) {
	d := decoder{in: raw}
	d.skipSpace()
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	d.skipSpace()
	if d.pos != len(d.in) {
		return nil, d.fail("unexpected data after the JSON value")
	}
	return v, nil
}

// decoder reads one JSON document. The success path keeps no record of
// where it is: an error collects its JSON pointer on the way back up.
type decoder struct {
	in  []byte
	pos int
	buf []byte // scratch for strings with escapes
}

func (d *decoder) fail(format string, args ...any) *decodeError {
	return &decodeError{Offset: d.pos, Msg: fmt.Sprintf(format, args...)}
}

// within prefixes the pointer of err with token, as the error travels out
// of the container that holds the failing value.
func within(err error, token string) error {
	if e, ok := err.(*decodeError); ok {
		e.Path = append([]string{token}, e.Path...)
	}
	return err
}

func (d *decoder) skipSpace() {
	for d.pos < len(d.in) {
		switch d.in[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *decoder) value(depth int) (any, error) {
	if d.pos >= len(d.in) {
		return nil, d.fail("unexpected end of JSON")
	}
	switch b := d.in[d.pos]; {
	case b == '{':
		return d.object(depth + 1)
	case b == '[':
		return d.array(depth + 1)
	case b == '"':
		return d.str()
	case b == 't':
		return true, d.literal("true")
	case b == 'f':
		return false, d.literal("false")
	case b == 'n':
		return nil, d.literal("null")
	case b == '-' || (b >= '0' && b <= '9'):
		return d.number()
	case b >= utf8.RuneSelf:
		return nil, d.fail("unexpected non-ASCII byte 0x%02x", b)
	default:
		return nil, d.fail("unexpected character %q", b)
	}
}

func (d *decoder) literal(lit string) error {
	if len(d.in)-d.pos < len(lit) || string(d.in[d.pos:d.pos+len(lit)]) != lit {
		return d.fail("invalid literal (expected %s)", lit)
	}
	d.pos += len(lit)
	return nil
}

func (d *decoder) object(depth int) (any, error) {
	if depth > maxDepth {
		return nil, d.fail("nesting deeper than %d", maxDepth)
	}
	d.pos++ // '{'
	obj := make(map[string]any)
	d.skipSpace()
	if d.pos < len(d.in) && d.in[d.pos] == '}' {
		d.pos++
		return obj, nil
	}
	for {
		if err := d.member(obj, depth); err != nil {
			return nil, err
		}
		d.skipSpace()
		if d.pos >= len(d.in) {
			return nil, d.fail("unexpected end of JSON in object")
		}
		switch d.in[d.pos] {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return obj, nil
		default:
			return nil, d.fail("expected ',' or '}' in object")
		}
	}
}

// member reads one "key": value pair into obj.
func (d *decoder) member(obj map[string]any, depth int) error {
	d.skipSpace()
	if d.pos >= len(d.in) || d.in[d.pos] != '"' {
		return d.fail("expected an object key")
	}
	keyAt := d.pos
	key, err := d.str()
	if err != nil {
		return err
	}
	if _, dup := obj[key]; dup {
		return &decodeError{Offset: keyAt, Msg: fmt.Sprintf("duplicate key %q", key)}
	}
	d.skipSpace()
	if d.pos >= len(d.in) || d.in[d.pos] != ':' {
		return d.fail("expected ':' after object key %q", key)
	}
	d.pos++
	d.skipSpace()
	v, err := d.value(depth)
	if err != nil {
		return within(err, key)
	}
	obj[key] = v
	return nil
}

func (d *decoder) array(depth int) (any, error) {
	if depth > maxDepth {
		return nil, d.fail("nesting deeper than %d", maxDepth)
	}
	d.pos++ // '['
	arr := make([]any, 0, 4)
	d.skipSpace()
	if d.pos < len(d.in) && d.in[d.pos] == ']' {
		d.pos++
		return arr, nil
	}
	for {
		d.skipSpace()
		v, err := d.value(depth)
		if err != nil {
			return nil, within(err, fmt.Sprint(len(arr)))
		}
		arr = append(arr, v)
		d.skipSpace()
		if d.pos >= len(d.in) {
			return nil, d.fail("unexpected end of JSON in array")
		}
		switch d.in[d.pos] {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return arr, nil
		default:
			return nil, d.fail("expected ',' or ']' in array")
		}
	}
}

// str reads the string at d.pos (which is '"'). A string without escapes
// is copied once, straight from the input.
func (d *decoder) str() (string, error) {
	b, err := d.strBytes()
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// strBytes reads the string at d.pos (which is '"') and returns its
// content: a slice of the input when it has no escapes, else d.buf, which
// the next string read overwrites.
func (d *decoder) strBytes() ([]byte, error) {
	d.pos++
	start := d.pos
	for d.pos < len(d.in) {
		b := d.in[d.pos]
		switch {
		case b == '"':
			s := d.in[start:d.pos]
			d.pos++
			return s, nil
		case b == '\\':
			return d.escaped(start)
		case b < 0x20:
			return nil, d.fail("control character 0x%02x in string", b)
		case b < utf8.RuneSelf:
			d.pos++
		default:
			if err := d.utf8Rune(); err != nil {
				return nil, err
			}
		}
	}
	return nil, d.fail("unterminated string")
}

// utf8Rune steps over one multi-byte UTF-8 sequence at d.pos.
func (d *decoder) utf8Rune() error {
	r, n := utf8.DecodeRune(d.in[d.pos:])
	if r == utf8.RuneError && n <= 1 {
		return d.fail("invalid UTF-8 in string")
	}
	d.pos += n
	return nil
}

// escaped finishes a string that holds escapes; start is where its
// content began.
func (d *decoder) escaped(start int) ([]byte, error) {
	buf := append(d.buf[:0], d.in[start:d.pos]...)
	for d.pos < len(d.in) {
		b := d.in[d.pos]
		switch {
		case b == '"':
			d.pos++
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
			d.pos++
		default:
			at := d.pos
			if err := d.utf8Rune(); err != nil {
				return nil, err
			}
			buf = append(buf, d.in[at:d.pos]...)
		}
	}
	return nil, d.fail("unterminated string")
}

func (d *decoder) escape(buf []byte) ([]byte, error) {
	if d.pos+1 >= len(d.in) {
		return nil, d.fail("unterminated escape")
	}
	switch e := d.in[d.pos+1]; e {
	case '"', '\\', '/':
		d.pos += 2
		return append(buf, e), nil
	case 'b', 'f', 'n', 'r', 't':
		d.pos += 2
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

// unicode reads a \uXXXX escape at d.pos, and its low half when it is a
// high surrogate. An unpaired surrogate is refused: it is not a character.
func (d *decoder) unicode() (rune, error) {
	at := d.pos
	r, err := d.hex4()
	if err != nil || !utf16.IsSurrogate(r) {
		return r, err
	}
	if r < 0xDC00 && d.pos+1 < len(d.in) && d.in[d.pos] == '\\' && d.in[d.pos+1] == 'u' {
		lo, err := d.hex4()
		if err != nil {
			return 0, err
		}
		if r = utf16.DecodeRune(r, lo); r != utf8.RuneError {
			return r, nil
		}
	}
	return 0, &decodeError{Offset: at, Msg: "unpaired surrogate escape in string"}
}

// hex4 reads "\uXXXX" at d.pos.
func (d *decoder) hex4() (rune, error) {
	if d.pos+6 > len(d.in) {
		return 0, d.fail("short \\u escape")
	}
	var r rune
	for _, b := range d.in[d.pos+2 : d.pos+6] {
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
	d.pos += 6
	return r, nil
}

// number reads a number literal and keeps its exact text: json.Number
// preserves the precision of large integers and long fractions.
func (d *decoder) number() (any, error) {
	lit, err := d.numberBytes()
	if err != nil {
		return nil, err
	}
	return json.Number(lit), nil
}

// numberBytes reads a number literal at d.pos and returns it, a slice of
// the input.
func (d *decoder) numberBytes() ([]byte, error) {
	start := d.pos
	if d.in[d.pos] == '-' {
		d.pos++
	}
	switch {
	case d.pos < len(d.in) && d.in[d.pos] == '0':
		d.pos++
	case !d.digits():
		return nil, d.fail("invalid number: digit expected")
	}
	if d.pos < len(d.in) && d.in[d.pos] == '.' {
		d.pos++
		if !d.digits() {
			return nil, d.fail("invalid number: digit expected after '.'")
		}
	}
	if d.pos < len(d.in) && (d.in[d.pos] == 'e' || d.in[d.pos] == 'E') {
		d.pos++
		if d.pos < len(d.in) && (d.in[d.pos] == '+' || d.in[d.pos] == '-') {
			d.pos++
		}
		expAt := d.pos
		if !d.digits() {
			return nil, d.fail("invalid number: digit expected in exponent")
		}
		// No document needs an exponent of five significant digits, and
		// exact arithmetic on one would cost unbounded time and memory.
		// Leading zeros change nothing: 0E00000 is zero.
		if len(bytes.TrimLeft(d.in[expAt:d.pos], "0")) > maxExponentDigits {
			d.pos = start
			return nil, d.fail("number exponent out of range: at most %d digits", maxExponentDigits)
		}
	}
	return d.in[start:d.pos], nil
}

// maxExponentDigits bounds a number's exponent, in significant digits:
// 1e9999 is already far beyond any double.
const maxExponentDigits = 4

func (d *decoder) digits() bool {
	start := d.pos
	for d.pos < len(d.in) && d.in[d.pos] >= '0' && d.in[d.pos] <= '9' {
		d.pos++
	}
	return d.pos > start
}

// pointer renders reference tokens as a JSON pointer (RFC 6901).
func pointer(tokens []string) string {
	var sb strings.Builder
	for _, t := range tokens {
		sb.WriteByte('/')
		sb.WriteString(escapeToken(t))
	}
	return sb.String()
}

// escapeToken escapes one reference token: "~" as "~0", "/" as "~1".
func escapeToken(t string) string {
	if !strings.ContainsAny(t, "~/") {
		return t
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(t)
}
