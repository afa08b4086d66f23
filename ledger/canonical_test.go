package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
)

// TestAppendNumberRFC8785 checks the number table of RFC 8785 Appendix B:
// IEEE 754 bit patterns and their ECMAScript spelling.
func TestAppendNumberRFC8785(t *testing.T) {
	tests := []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"}, // minus zero
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"}, // round to even
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			f := math.Float64frombits(tt.bits)
			if got := string(AppendNumber(nil, f)); got != tt.want {
				t.Errorf("AppendNumber(%#016x) = %s, want %s", tt.bits, got, tt.want)
			}
		})
	}
}

func TestCanonicalize(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		// RFC 8785 section 3.2.2.
		{"RFC8785Example", `{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`, `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`},
		// RFC 8785 section 3.2.3: keys sort by UTF-16 code units, so the
		// emoji (a surrogate pair, 0xD83D...) sorts before U+FB33.
		{"RFC8785Sorting", `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`, "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"\u00f6\":\"Latin Small Letter O With Diaeresis\",\"\u20ac\":\"Euro Sign\",\"\U0001F600\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"},
		{"RawKeysSortLikeEscaped", "{\"\uffff\":1,\"😀\":2,\"\ue000\":3}", "{\"😀\":2,\"\ue000\":3,\"\uffff\":1}"},
		{"SharedPrefixKeys", `{"ab":1,"a":2,"abc":3,"b":4}`, `{"a":2,"ab":1,"abc":3,"b":4}`},
		{"NestedObjectsSortEach", `{"b":{"z":1,"y":[{"d":1,"c":2}]},"a":0}`, `{"a":0,"b":{"y":[{"c":2,"d":1}],"z":1}}`},
		{"Whitespace", " \t\r\n[ 1 , { } , [ ] , \"\" ] \n", `[1,{},[],""]`},
		{"Empty", `{}`, `{}`},
		{"Scalar", `"x"`, `"x"`},
		{"Exponent", `1e+23`, `1e+23`},
		{"Micro", `0.000001`, `0.000001`},
		{"BelowMicro", `1e-7`, `1e-7`},
		{"MaxSafeInteger", `9007199254740992`, `9007199254740992`},
		{"MinSafeInteger", `-9007199254740992`, `-9007199254740992`},
		{"MinusZero", `-0`, `0`},
		{"MinusZeroFloat", `-0.0`, `0`},
		{"TrailingZeros", `[1.0, 1.50, 100, 1e2, 1E+2, 0.1e1]`, `[1,1.5,100,100,100,1]`},
		{"LargeDouble", `1.5e300`, `1.5e+300`},
		{"FloatNotationBeyond2p53", `9007199254740993.0`, `9007199254740992`},
		{"Underflow", `1e-400`, `0`},
		{"EscapesShortForms", `"\b\f\n\r\t\"\\\/"`, `"\b\f\n\r\t\"\\/"`},
		{"EscapesControl", `"\u0000\u001f\u007f"`, "\"\\u0000\\u001f\u007f\""},
		{"EscapedNonASCII", `"\u00e9\u2028\uD83D\uDE00"`, "\"é\u2028😀\""},
		{"RawNonASCII", "\"é😀\"", "\"é😀\""},
		{"EscapedKey", `{"\u0061":1}`, `{"a":1}`},
		{"DeepButAllowed", strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth), strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Canonicalize([]byte(tt.in))
			if err != nil {
				t.Fatalf("Canonicalize: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("Canonicalize =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestCanonicalizeRefuses(t *testing.T) {
	tests := []struct {
		name, in string
		offset   int
		msg      string
	}{
		{"DuplicateKey", `{"a":1,"b":2,"a":3}`, 13, `duplicate key "a"`},
		{"DuplicateKeySorted", `{"a":1,"a":2}`, 7, `duplicate key "a"`},
		{"DuplicateEscapedKey", `{"a":1,"\u0061":2}`, 7, `duplicate key "a"`},
		{"DuplicateNestedKey", `[{"x":{"k":1,"j":0,"k":2}}]`, 19, `duplicate key "k"`},
		{"EarliestDuplicate", `{"b":1,"a":1,"b":2,"a":2}`, 13, `duplicate key "b"`},
		{"InvalidUTF8", "\"a\xffb\"", 2, "invalid UTF-8"},
		{"EncodedSurrogateUTF8", "\"\xed\xa0\x80\"", 1, "invalid UTF-8"},
		{"LoneHighSurrogate", `"\ud83d"`, 1, "unpaired surrogate"},
		{"LoneLowSurrogate", `"\ude00x"`, 1, "unpaired surrogate"},
		{"HighThenNonSurrogate", `"\ud83d\u0041"`, 1, "unpaired surrogate"},
		{"IntegerBeyond2p53", `9007199254740993`, 0, "beyond ±2^53"},
		{"NegativeIntegerBeyond2p53", `-9007199254740993`, 0, "beyond ±2^53"},
		{"LongInteger", `[123456789012345678901234567890]`, 1, "beyond ±2^53"},
		{"Overflow", `1e400`, 0, "beyond the range of a double"},
		{"NegativeOverflow", `[-1e400]`, 1, "beyond the range of a double"},
		{"TrailingData", `{} {}`, 3, "unexpected data"},
		{"TrailingComma", `[1,]`, 3, "unexpected character"},
		{"TooDeep", strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1), maxDepth, "nesting deeper"},
		{"TooDeepObjects", strings.Repeat(`{"a":`, maxDepth+1) + "1" + strings.Repeat("}", maxDepth+1), 5 * maxDepth, "nesting deeper"},
		{"Empty", ``, 0, "unexpected end"},
		{"ControlInString", "\"a\tb\"", 2, "control character"},
		{"BadEscape", `"\x"`, 1, "invalid escape"},
		{"ShortUnicodeEscape", `"\u12"`, 1, "short \\u escape"},
		{"LeadingZero", `01`, 1, "unexpected data"},
		{"BareMinus", `-`, 1, "invalid number"},
		{"MissingFraction", `1.`, 2, "digit expected after '.'"},
		{"MissingExponent", `1e`, 2, "digit expected in exponent"},
		{"BadLiteral", `nul`, 0, "invalid literal"},
		{"Unterminated", `"abc`, 4, "unterminated string"},
		{"MissingColon", `{"a" 1}`, 5, "expected ':'"},
		{"NonStringKey", `{1:2}`, 1, "expected an object key"},
		{"UnclosedObject", `{"a":1`, 6, "unexpected end of JSON in object"},
		{"UnclosedArray", `[1`, 2, "unexpected end of JSON in array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []byte("keep")
			out, err := AppendCanonical(dst, []byte(tt.in))
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("AppendCanonical(%q) error = %v, want a *SyntaxError", tt.in, err)
			}
			if se.Offset != tt.offset || !strings.Contains(se.Msg, tt.msg) {
				t.Errorf("error = %v, want offset %d and %q", err, tt.offset, tt.msg)
			}
			if string(out) != "keep" {
				t.Errorf("dst = %q after an error, want it unchanged", out)
			}
		})
	}
}

// TestCanonicalizeIntegerBoundary walks the integers around ±2^53: every
// integer literal beyond it is refused, so no two accepted literals hash
// alike and none hashes as another value.
func TestCanonicalizeIntegerBoundary(t *testing.T) {
	for n := int64(MaxSafeInteger - 3); n <= MaxSafeInteger+5; n++ {
		for _, v := range []int64{n, -n} {
			lit := strconv.FormatInt(v, 10)
			out, err := Canonicalize([]byte(lit))
			ok := v >= -MaxSafeInteger && v <= MaxSafeInteger
			if ok != (err == nil) {
				t.Errorf("Canonicalize(%s) error = %v, want accepted = %v", lit, err, ok)
			}
			if err == nil && string(out) != lit {
				t.Errorf("Canonicalize(%s) = %s", lit, out)
			}
		}
	}
}

// TestCanonicalizeLargeNumbers checks numbers beyond 2^53: integer
// literals are refused whatever the value, doubles spelt with a fraction or
// exponent are refused only where their canonical form would be such an
// integer literal, and every accepted canonical form is a fixed point.
func TestCanonicalizeLargeNumbers(t *testing.T) {
	tests := []struct {
		lit, want string // want "" means refused
	}{
		{"100000000000000000000", ""},
		{"18446744073709551616", ""},
		{"18446744073709552000", ""},
		{"-100000000000000000000", ""},
		{"1000000000000000000000", ""},
		{"1e20", ""},
		{"9007199254740994.0", ""},
		{"1e21", "1e+21"},
		{"-1.5e300", "-1.5e+300"},
		{"9007199254740992.0", "9007199254740992"},
		{"1E30", "1e+30"},
		{"123456.5e3", "123456500"},
	}
	for _, tt := range tests {
		t.Run(tt.lit, func(t *testing.T) {
			out, err := Canonicalize([]byte(tt.lit))
			if tt.want == "" {
				if err == nil || !strings.Contains(err.Error(), "beyond ±2^53") {
					t.Fatalf("Canonicalize(%s) = %s, %v; want refused as beyond ±2^53", tt.lit, out, err)
				}
				return
			}
			if err != nil || string(out) != tt.want {
				t.Fatalf("Canonicalize(%s) = %s, %v; want %s", tt.lit, out, err, tt.want)
			}
			if again, err := Canonicalize(out); err != nil || string(again) != tt.want {
				t.Errorf("canonical form %s is not a fixed point: %s, %v", out, again, err)
			}
		})
	}
}

func TestCompareUTF16(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want int // sign
	}{
		{"Equal", "abc", "abc", 0},
		{"Prefix", "ab", "abc", -1},
		{"ASCII", "b", "a", 1},
		{"ASCIIBeforeNonASCII", "z", "é", -1},
		{"SupplementaryBeforePrivateUse", "😀", "\ue000", -1},
		{"SupplementaryBeforeFFFF", "a😀", "a\uffff", -1},
		{"TwoSupplementary", "😀", "😂", -1},
		{"BMPOrder", "\u00f6", "\u20ac", -1},
		{"SharedLeadByte", "\u00e9", "\u00e8", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := compareUTF16(tt.a, tt.b)
			if sign(got) != tt.want {
				t.Errorf("compareUTF16(%q, %q) = %d, want sign %d", tt.a, tt.b, got, tt.want)
			}
			if sign(compareUTF16([]byte(tt.b), []byte(tt.a))) != -tt.want {
				t.Errorf("compareUTF16 is not antisymmetric on %q, %q", tt.a, tt.b)
			}
		})
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

func TestActionDigest(t *testing.T) {
	a, err := ActionDigest("issue_vms_update", []byte(`{"sign": "S1", "message":"SLOW"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := ActionDigest("issue_vms_update", []byte("{\n  \"message\": \"SLOW\",\n  \"sign\": \"S1\"\n}"))
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("digests of the same arguments differ: %s, %s", a, b)
	}
	sum := sha256.Sum256([]byte(`{"arguments":{"message":"SLOW","sign":"S1"},"tool":"issue_vms_update"}`))
	if want := hex.EncodeToString(sum[:]); a != want {
		t.Errorf("ActionDigest = %s, want %s", a, want)
	}
	if c, _ := ActionDigest("issue_vms_update", []byte(`{"sign":"S2","message":"SLOW"}`)); c == a {
		t.Errorf("digests of different arguments are equal")
	}
	if _, err := ActionDigest("t", []byte(`{"n":9007199254740993}`)); err == nil {
		t.Errorf("ActionDigest accepted an integer beyond 2^53")
	}
}

// TestCompareKeysAgrees checks compareUTF16 and the prefix shortcut of
// compareKeys against comparing UTF-16 encodings, for every pair of keys chosen to stress it: shared
// prefixes, NUL bytes, lengths around eight, non-ASCII in and beyond the
// prefix.
func TestCompareKeysAgrees(t *testing.T) {
	keys := []string{
		"", "a", "a\x00", "a\x00b", "ab", "abcdefg", "abcdefgh", "abcdefgh\x00", "abcdefghi",
		"abcdefgi", "abcdefg\x7f", "abcdefgé", "abcdefgh😀", "abcdefgh\ue000", "é", "😀", "\ue000",
		"\uffff", "z", "Z", "\x00", "\x00\x00",
	}
	ms := make([]member, len(keys))
	sks := make([]sortKey, len(keys))
	for i, k := range keys {
		ms[i] = member{key: []byte(k)}
		sks[i] = sortKey{prefix: keyPrefix([]byte(k)), i: i}
	}
	for i := range keys {
		for j := range keys {
			want := slices.Compare(utf16.Encode([]rune(keys[i])), utf16.Encode([]rune(keys[j])))
			if got := sign(compareUTF16(keys[i], keys[j])); got != want {
				t.Errorf("compareUTF16(%q, %q) = %d, want %d", keys[i], keys[j], got, want)
			}
			if got := sign(compareKeys(ms, sks[i], sks[j])); got != want {
				t.Errorf("compareKeys(%q, %q) = %d, want %d", keys[i], keys[j], got, want)
			}
		}
	}
}

// TestAppendString compares the string writers with a plain rendering of
// RFC 8785's rules, on every ASCII byte and on runes of every length.
func TestAppendString(t *testing.T) {
	var all strings.Builder
	for b := range 0x80 {
		all.WriteByte(byte(b))
	}
	inputs := []string{"", "plain", all.String(), "é€😀\u2028\ufffd", "x\x00y\"z\\", strings.Repeat("abc\n", 9)}
	for _, in := range inputs {
		want := `"`
		for _, r := range in {
			switch {
			case r == '"' || r == '\\':
				want += `\` + string(r)
			case r == '\b':
				want += `\b`
			case r == '\f':
				want += `\f`
			case r == '\n':
				want += `\n`
			case r == '\r':
				want += `\r`
			case r == '\t':
				want += `\t`
			case r < 0x20:
				want += fmt.Sprintf(`\u%04x`, r)
			default:
				want += string(r)
			}
		}
		want += `"`
		if got := string(appendString(nil, in)); got != want {
			t.Errorf("appendString(%q) = %s, want %s", in, got, want)
		}
		if got, ok := appendValidString(nil, []byte(in)); !ok || string(got) != want {
			t.Errorf("appendValidString(%q) = %s, %v, want %s", in, got, ok, want)
		}
	}
	for _, in := range []string{"\xff", "a\xc3", "\xed\xa0\x80", "ok\xf0\x9f\x98"} {
		if _, ok := appendValidString(nil, in); ok {
			t.Errorf("appendValidString(%q) accepted invalid UTF-8", in)
		}
		if got := string(appendString(nil, in)); got != `"`+in+`"` {
			t.Errorf("appendString(%q) = %q, want the bytes as they are", in, got)
		}
	}
}

// TestDocNumbers holds the package documentation to the code: each number
// doc.go gives as accepted is accepted by Check, and each it gives as
// refused is refused.
func TestDocNumbers(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, list := range []struct {
		prefix   string
		accepted bool
	}{
		{"// Accepted, for example: ", true},
		{"// Refused, for example: ", false},
	} {
		var lits []string
		for line := range strings.Lines(string(doc)) {
			if rest, ok := strings.CutPrefix(line, list.prefix); ok {
				lits = strings.Split(strings.TrimSuffix(strings.TrimSpace(rest), "."), ", ")
			}
		}
		if len(lits) < 5 {
			t.Fatalf("doc.go lists %d numbers after %q, want the examples", len(lits), list.prefix)
		}
		for _, lit := range lits {
			if err := Check([]byte(lit)); (err == nil) != list.accepted {
				t.Errorf("doc.go says %s is accepted = %v; Check says %v", lit, list.accepted, err)
			}
		}
	}
}
