package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want any
	}{
		{"OKObject", `{"a": [1, -2.5e3, true, false, null], "b": {}}`,
			map[string]any{"a": []any{json.Number("1"), json.Number("-2.5e3"), true, false, nil}, "b": map[string]any{}}},
		{"OKLargeInteger", `123456789012345678901234567890`, json.Number("123456789012345678901234567890")},
		{"OKEscapes", `"a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"`, "a\"\\/\b\f\n\r\té😀"},
		{"OKRawUTF8", `"déjà 😀"`, "déjà 😀"},
		{"OKEscapedKeysDiffer", `{"a": 1, "\u0062": 2}`, map[string]any{"a": json.Number("1"), "b": json.Number("2")}},
		{"OKWhitespace", " \t\r\n[ ] \n", []any{}},
		{"OKZero", `-0`, json.Number("-0")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode([]byte(tc.in))
			if err != nil {
				t.Fatalf("Decode(%q): %v", tc.in, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Decode(%q) = %#v, want %#v", tc.in, got, tc.want)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, in string
		offset   int
		pointer  string
		msg      string
	}{
		{"ErrEmpty", ``, 0, "", "unexpected end of JSON"},
		{"ErrDuplicateKey", `{"a": 1, "a": 2}`, 9, "", `duplicate key "a"`},
		{"ErrDuplicateEscapedKey", `{"x": [{"b": 1, "\u0062": 2}]}`, 16, "/x/0", `duplicate key "b"`},
		{"ErrInvalidUTF8", "{\"k\": \"a\xffb\"}", 8, "/k", "invalid UTF-8 in string"},
		{"ErrOverlongUTF8", "\"\xc0\xaf\"", 1, "", "invalid UTF-8 in string"},
		{"ErrSurrogateUTF8", "\"\xed\xa0\x80\"", 1, "", "invalid UTF-8 in string"},
		{"ErrInvalidUTF8AfterEscape", "\"\\n\xff\"", 3, "", "invalid UTF-8 in string"},
		{"ErrUTF8OutsideString", "\xef\xbb\xbf{}", 0, "", "unexpected non-ASCII byte 0xef"},
		{"ErrLoneHighSurrogate", `["\ud800x"]`, 2, "/0", "unpaired surrogate"},
		{"ErrLoneLowSurrogate", `"\udc00"`, 1, "", "unpaired surrogate"},
		{"ErrControlCharacter", "\"a\tb\"", 2, "", "control character 0x09"},
		{"ErrBadEscape", `"\x"`, 1, "", `invalid escape \x`},
		{"ErrShortUnicode", `"\u12"`, 1, "", "short \\u escape"},
		{"ErrTrailingComma", `[1,]`, 3, "/1", "unexpected character ']'"},
		{"ErrMissingColon", `{"a" 1}`, 5, "", "expected ':'"},
		{"ErrUnterminated", `{"a": "b`, 8, "/a", "unterminated string"},
		{"ErrLeadingZero", `01`, 1, "", "unexpected data after the JSON value"},
		{"ErrBareMinus", `-`, 1, "", "digit expected"},
		{"ErrFraction", `1.`, 2, "", "digit expected after '.'"},
		{"ErrExponent", `1e+`, 3, "", "digit expected in exponent"},
		{"ErrLiteral", `tru`, 0, "", "invalid literal"},
		{"ErrNaN", `NaN`, 0, "", "unexpected character 'N'"},
		{"ErrTwoValues", `{} {}`, 3, "", "unexpected data after the JSON value"},
		{"ErrDepth", strings.Repeat("[", MaxDepth+1), MaxDepth, strings.Repeat("/0", MaxDepth), "nesting deeper than 512"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.in))
			var de *SyntaxError
			if !errors.As(err, &de) {
				t.Fatalf("Decode(%q) = %v, want a *SyntaxError", tc.in, err)
			}
			if de.Offset != tc.offset || de.Pointer() != tc.pointer || !strings.Contains(de.Msg, tc.msg) {
				t.Errorf("Decode(%q) = offset %d at %q: %q; want offset %d at %q: %q", tc.in, de.Offset, de.Pointer(), de.Msg, tc.offset, tc.pointer, tc.msg)
			}
		})
	}
}

func TestDecodeDepth(t *testing.T) {
	ok := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	if _, err := Decode([]byte(ok)); err != nil {
		t.Errorf("nesting of exactly %d: %v", MaxDepth, err)
	}
}

func TestDecodePointerEscapes(t *testing.T) {
	_, err := Decode([]byte(`{"a/b": {"c~d": [0, tru]}}`))
	var de *SyntaxError
	if !errors.As(err, &de) || de.Pointer() != "/a~1b/c~0d/1" {
		t.Errorf("got %v, want an error at /a~1b/c~0d/1", err)
	}
}

// FuzzDecode checks the decoder against encoding/json: whatever decode
// accepts, encoding/json accepts and reads as the same tree; whatever
// encoding/json accepts as valid UTF-8 and decode refuses must be one of
// the stricter rules (duplicate key, unpaired surrogate, depth, an
// exponent of more than four significant digits).
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"a": [1, -2.5e3, true, false, null], "b": {"c": "d\u00e9"}}`,
		`{"a": 1, "a": 2}`, `"\ud83d\ude00"`, `"\ud800"`, "\"\xff\"", `[1,]`, `-0.0e-0`,
		`{"x": [{"b": 1, "\u0062": 2}]}`, `123456789012345678901234567890`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := Decode(raw)
		if err == nil {
			checkSameAsStdlib(t, raw, got)
			return
		}
		var de *SyntaxError
		if !errors.As(err, &de) || de.Offset < 0 || de.Offset > len(raw) {
			t.Fatalf("Decode(%q) = %v: want a *SyntaxError with an offset within the input", raw, err)
		}
		if json.Valid(raw) && utf8.Valid(raw) && !stricterRule(de.Msg) {
			t.Fatalf("Decode(%q) refused valid JSON: %v", raw, err)
		}
	})
}

func stricterRule(msg string) bool {
	for _, rule := range []string{"duplicate key", "unpaired surrogate", "nesting deeper", "exponent out of range"} {
		if strings.Contains(msg, rule) {
			return true
		}
	}
	return false
}

func checkSameAsStdlib(t *testing.T, raw []byte, got any) {
	t.Helper()
	if !json.Valid(raw) {
		t.Fatalf("decode accepted %q, which encoding/json rejects", raw)
	}
	if !utf8.Valid(raw) {
		t.Fatalf("decode accepted invalid UTF-8 %q", raw)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var want any
	if err := dec.Decode(&want); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Decode(%q) = %#v, encoding/json reads %#v", raw, got, want)
	}
}
