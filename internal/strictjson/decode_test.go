package strictjson

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want any
	}{
		{"OKObject", `{"a": [1, -2.5e3, true, false, null], "b": {}}`,
			map[string]any{"a": []any{json.Number("1"), json.Number("-2.5e3"), true, false, nil}, "b": map[string]any{}}},
		{"OKSafeInteger", `[9007199254740992, -9007199254740992]`, []any{json.Number("9007199254740992"), json.Number("-9007199254740992")}},
		{"OKLongFraction", `0.1000000000000000000000000000001`, json.Number("0.1000000000000000000000000000001")},
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
		{"ErrLargeInteger", `{"n": 123456789012345678901234567890}`, 6, "/n", "beyond ±2^53"},
		{"ErrIntegerAbove2p53", `9007199254740993`, 0, "", "beyond ±2^53"},
		{"ErrDoubleRange", `[1, 1e400]`, 4, "/1", "beyond the range of a double"},
		{"ErrIntegralDouble", `1e20`, 0, "", "integer beyond ±2^53"},
		{"ErrLongExponent", `1e-10000`, 0, "", "exponent out of range"},
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

// TestPlainPrefix puts every byte value at every position of a window
// that spans two eight-byte words, and compares with a byte-wise scan.
func TestPlainPrefix(t *testing.T) {
	plain := func(b byte) bool { return b >= 0x20 && b != '"' && b != '\\' && b < 0x80 }
	for n := 0; n <= 19; n++ {
		for pos := 0; pos < n; pos++ {
			for v := 0; v < 256; v++ {
				s := []byte(strings.Repeat("a~ ", 7)[:n])
				s[pos] = byte(v)
				want := n
				if !plain(byte(v)) {
					want = pos
				}
				if got := PlainPrefix(s); got != want {
					t.Fatalf("PlainPrefix(%q) = %d, want %d", s, got, want)
				}
				if got := PlainPrefix(string(s)); got != want {
					t.Fatalf("PlainPrefix(string %q) = %d, want %d", s, got, want)
				}
			}
		}
	}
}

// TestSkip checks that Skip, which finds the end of a body in a ledger
// export line, judges syntax exactly as Decode does and nothing more.
func TestSkip(t *testing.T) {
	tests := []struct {
		name, in string
		ok       bool
	}{
		{"Object", `{"b":[1,2.5,"x\n",true,false,null],"a":{}}`, true},
		{"DuplicateKey", `{"a":1,"a":2}`, true},
		{"IntegerBeyond2p53", `[9007199254740993]`, true},
		{"Overflow", `1e400`, true},
		{"Whitespace", " [ 1 , { \"a\" : 2 } ] ", true},
		{"InvalidUTF8", "\"\xff\"", false},
		{"LoneSurrogate", `"\ud800"`, false},
		{"TrailingComma", `[1,]`, false},
		{"ObjectTrailingComma", `{"a":1,}`, false},
		{"MissingColon", `{"a" 1}`, false},
		{"BadLiteral", `tru`, false},
		{"LeadingZero", `01`, false},
		{"Unclosed", `{"a":[1}`, false},
		{"TooDeep", strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), false},
		{"Empty", ``, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := skipsTo([]byte(tt.in)) == len(tt.in); got != tt.ok {
				t.Errorf("skip(%q) accepted = %v, want %v", tt.in, got, tt.ok)
			}
		})
	}
}

// skipsTo returns where Skip ends on data, the space after the value
// included, or -1 if it fails.
func skipsTo(data []byte) int {
	d := Reader{In: data}
	d.SkipSpace()
	if err := d.Skip(0); err != nil {
		return -1
	}
	d.SkipSpace()
	return d.Pos
}

// TestDecodeExact checks that DecodeExact, the contracts' reader, keeps
// numbers beyond the double rules exactly and holds every other rule.
func TestDecodeExact(t *testing.T) {
	got, err := DecodeExact([]byte(`{"maximum": 18446744073709551615, "big": 1e400, "round": 1e20}`))
	want := map[string]any{"maximum": json.Number("18446744073709551615"), "big": json.Number("1e400"), "round": json.Number("1e20")}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodeExact = %#v, %v; want %#v", got, err, want)
	}
	for _, tc := range []struct{ in, msg string }{
		{`1e10000`, "exponent out of range"},
		{`{"a": 1, "a": 2}`, "duplicate key"},
		{`"\ud800"`, "unpaired surrogate"},
		{"\"\xff\"", "invalid UTF-8"},
		{`[1] 2`, "unexpected data after the JSON value"},
		{strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), "nesting deeper"},
	} {
		if _, err := DecodeExact([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("DecodeExact(%.20q) = %v, want refused with %q", tc.in, err, tc.msg)
		}
	}
}
