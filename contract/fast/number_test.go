package fast

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/custody-dev/custody/internal/strictjson"
)

func TestNumberKnown(t *testing.T) {
	tests := []struct {
		lit  string
		want bool
	}{
		{"1", true},
		{"-12.5", true},
		{lit400, true},
		{lit401, false},
		{"1e999", true},
		{"1E+999", true},
		{"1e-999", true},
		{"1e1000", false},
		{"1e-0999", false},
		{"1e+0001", false},
		{strings.Repeat("9", 400), true},
		{strings.Repeat("9", 401), false},
	}
	for _, tt := range tests {
		if got := numberKnown([]byte(tt.lit)); got != tt.want {
			t.Errorf("numberKnown(%.20s… len %d) = %v, want %v", tt.lit, len(tt.lit), got, tt.want)
		}
	}
}

func TestPlainInteger(t *testing.T) {
	for lit, want := range map[string]bool{"12": true, "-3": true, "0": true, "1.0": false, "1e2": false, "1E2": false, "-0.5": false} {
		if got := plainInteger([]byte(lit)); got != want {
			t.Errorf("plainInteger(%s) = %v, want %v", lit, got, want)
		}
	}
}

func TestParseDecimal(t *testing.T) {
	tests := []struct {
		lit  string
		want decimal
	}{
		{"0", decimal{}},
		{"-0", decimal{}},
		{"0.000", decimal{}},
		{"-0e5", decimal{}},
		{"120", decimal{digits: "12", exp: 3}},
		{"0.0125", decimal{digits: "125", exp: -1}},
		{"-1.5e3", decimal{neg: true, digits: "15", exp: 4}},
		{"1E+2", decimal{digits: "1", exp: 3}},
		{"123.4500e-2", decimal{digits: "12345", exp: 1}},
		{"0.5E-3", decimal{digits: "5", exp: -3}},
		{"7", decimal{digits: "7", exp: 1}},
	}
	for _, tt := range tests {
		if got := parseDecimal(tt.lit); got != tt.want {
			t.Errorf("parseDecimal(%s) = %+v, want %+v", tt.lit, got, tt.want)
		}
	}
}

func TestCompareDecimals(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"1", "1.0", 0},
		{"1e2", "100", 0},
		{"0", "-0", 0},
		{"-1", "1", -1},
		{"1", "-1", 1},
		{"0.1", "0.10000000000000001", -1},
		{"-2", "-10", 1},
		{"-10", "-2", -1},
		{"99", "100", -1},
		{"0", "1e-300", -1},
		{"-1e-300", "0", -1},
		{"12", "2", 1},
		{"0.5", "0.45", 1},
		{"0.45", "0.5", -1},
		{"0.123", "0.12", 1},
		{"-0.123", "-0.12", -1},
		{"9007199254740993", "9007199254740992", 1},
	}
	for _, tt := range tests {
		if got := compareDecimals(parseDecimal(tt.a), parseDecimal(tt.b)); got != tt.want {
			t.Errorf("compareDecimals(%s, %s) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestLiteralInteger(t *testing.T) {
	tests := []struct {
		lit          string
		isInt, known bool
	}{
		{"5", true, true},
		{"-5", true, true},
		{"5.0", true, true},
		{"5.5", false, true},
		{"1.5e1", true, true},
		{"1e-1", false, true},
		{"1e400", true, true},
		{"0.0", true, true},
		{lit401, false, false},
		{"1e0001", false, false},
		{strings.Repeat("1", 500), true, true},
	}
	for _, tt := range tests {
		if isInt, known := literalInteger([]byte(tt.lit)); isInt != tt.isInt || known != tt.known {
			t.Errorf("literalInteger(%.20s) = %v, %v; want %v, %v", tt.lit, isInt, known, tt.isInt, tt.known)
		}
	}
}

func TestLiteralFloat(t *testing.T) {
	tests := []struct {
		lit  string
		want float64
	}{
		{"123", 123},
		{"-42", -42},
		{"999999999999999", 999999999999999},
		{"-999999999999999", -999999999999999},
		{"9007199254740993", 9007199254740992},
		{"1.5", 1.5},
		{"1e2", 100},
		{"1e400", math.Inf(1)},
		{"-1e400", math.Inf(-1)},
	}
	for _, tt := range tests {
		if got := literalFloat([]byte(tt.lit)); got != tt.want {
			t.Errorf("literalFloat(%s) = %v, want %v", tt.lit, got, tt.want)
		}
	}
	if got := literalFloat([]byte("-0")); got != 0 || !math.Signbit(got) {
		t.Errorf("literalFloat(-0) = %v, want negative zero", got)
	}
}

func TestNewBound(t *testing.T) {
	for _, tt := range []struct {
		lit string
		ok  bool
	}{{"0", true}, {"-1.5", true}, {"1e308", true}, {"1e999", true}, {"1e-999", true}, {"1e1000", false}, {lit401, false}, {lit400, true}} {
		b, ok := newBound(below, tt.lit)
		if ok != tt.ok {
			t.Errorf("newBound(%.20s) ok = %v, want %v", tt.lit, ok, tt.ok)
		}
		if ok && (b.op != below || b.exact != parseDecimal(tt.lit)) {
			t.Errorf("newBound(%.20s) = %+v", tt.lit, b)
		}
	}
	if b, _ := newBound(atLeast, "1e999"); !math.IsInf(b.float, 1) {
		t.Errorf("a limit beyond a double rounds to %v, want +Inf", b.float)
	}
}

func TestBoundHolds(t *testing.T) {
	tests := []struct {
		op         boundOp
		limit, lit string
		want       verdict
	}{
		{atLeast, "0.1", "0.1", pass},
		{atLeast, "0.1", "0.09999999999999999", fail},
		{atLeast, "0.1", "0.1000000000000000000001", pass},
		{atLeast, "0.1", "0.0999999999999999999999", fail},
		{atMost, "0.1", "0.1000000000000000000001", fail},
		{atMost, "0.1", "1e-1", pass},
		{above, "0.1", "0.1", fail},
		{above, "0.1", "0.1000000000000000000001", pass},
		{below, "0.1", "0.1", fail},
		{below, "0.1", "0.0999999999999999999999", pass},
		{atLeast, "1e999", "1e308", fail},
		{atMost, "1e999", "1e308", pass},
		{atLeast, "-1e999", "-1e308", pass},
		{atLeast, "1e-999", "0", fail},
		{above, "-1e-999", "0", pass},
		{atMost, "9007199254740993", "9007199254740992", pass},
		{atLeast, "9007199254740993", "9007199254740992", fail},
		{atLeast, "-0", "0", pass},
		{below, "0", "-0", fail},
	}
	for _, tt := range tests {
		b, ok := newBound(tt.op, tt.limit)
		if !ok {
			t.Fatalf("newBound(%s)", tt.limit)
		}
		if got := b.holds([]byte(tt.lit), literalFloat([]byte(tt.lit))); got != tt.want {
			t.Errorf("bound %d %s on %s = %v, want %v", tt.op, tt.limit, tt.lit, got, tt.want)
		}
	}
}

func TestNewMultiple(t *testing.T) {
	tests := []struct {
		lit   string
		ok    bool
		small int64
	}{
		{"3", true, 3},
		{"0.5", true, 0},
		{"1e2", true, 0},
		{"123456789012345678", true, 123456789012345678},
		{"1234567890123456789", true, 0},
		{"0", false, 0},
		{"0.0", false, 0},
		{"-1", false, 0},
		{"1e1000", false, 0},
		{lit401, false, 0},
	}
	for _, tt := range tests {
		m, ok := newMultiple(tt.lit)
		if ok != tt.ok || (ok && m.small != tt.small) {
			t.Errorf("newMultiple(%.20s) = %+v, %v; want small %d, %v", tt.lit, m, ok, tt.small, tt.ok)
		}
	}
}

func TestDivides(t *testing.T) {
	tests := []struct {
		divisor, lit string
		want         verdict
	}{
		{"3", "9", pass},
		{"3", "-9", pass},
		{"3", "10", fail},
		{"3", "0", pass},
		{"3", "9.0", pass},
		{"3", "9e0", pass},
		{"3", "4.5", fail},
		{"3", "999999999999999999", pass},
		{"3", "1000000000000000000", fail},
		{"0.1", "0.3", pass},
		{"0.1", "0.35", fail},
		{"0.01", "19.99", pass},
		{"1e-3", "0.0075", fail},
		{"1", lit400, pass},
		{"1", lit401, unsure},
		{"2", "1e0001", unsure},
		{"1234567890123456789", "2469135780246913578", pass},
		{"1234567890123456789", "2469135780246913579", fail},
	}
	for _, tt := range tests {
		m, ok := newMultiple(tt.divisor)
		if !ok {
			t.Fatalf("newMultiple(%s)", tt.divisor)
		}
		if got := m.divides([]byte(tt.lit)); got != tt.want {
			t.Errorf("%.20s multipleOf %s = %v, want %v", tt.lit, tt.divisor, got, tt.want)
		}
	}
}

func TestSameNumber(t *testing.T) {
	tests := []struct {
		a, b string
		want verdict
	}{
		{"1", "1", pass},
		{"1", "1.0", pass},
		{"1e2", "100", pass},
		{"-0", "0", pass},
		{"1", "2", fail},
		{"1", "-1", fail},
		{lit401, "1", unsure},
		{"1", lit401, unsure},
		{lit400, "1", pass},
	}
	for _, tt := range tests {
		if got := sameNumber(tt.a, tt.b); got != tt.want {
			t.Errorf("sameNumber(%.20s, %.20s) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func decoded(t *testing.T, doc string) any {
	t.Helper()
	v, err := strictjson.Decode([]byte(doc))
	if err != nil {
		t.Fatalf("decode %s: %v", doc, err)
	}
	return v
}

func TestEqualValues(t *testing.T) {
	tests := []struct {
		a, b string
		want verdict
	}{
		{`{"a": 1, "b": [1, 2]}`, `{"b": [1, 2.0], "a": 1e0}`, pass},
		{`{"a": 1}`, `{"a": 1, "b": 2}`, fail},
		{`{"a": 1, "b": 2}`, `{"a": 1}`, fail},
		{`{"a": 1}`, `{"b": 1}`, fail},
		{`{"a": 1}`, `[1]`, fail},
		{`{}`, `{}`, pass},
		{`[1, 2]`, `[2, 1]`, fail},
		{`[1, 2]`, `[1, 2, 3]`, fail},
		{`[1]`, `{"0": 1}`, fail},
		{`[]`, `[]`, pass},
		{`[` + lit401 + `]`, `[1]`, unsure},
		{`{"a": ` + lit401 + `}`, `{"a": 1}`, unsure},
		{`[2, ` + lit401 + `]`, `[1, 1]`, fail},
		{`"a"`, `"a"`, pass},
		{`"a"`, `"b"`, fail},
		{`"1"`, `1`, fail},
		{`1`, `"1"`, fail},
		{`true`, `true`, pass},
		{`true`, `false`, fail},
		{`false`, `null`, fail},
		{`null`, `null`, pass},
		{`null`, `false`, fail},
		{`null`, `0`, fail},
		{`0`, `null`, fail},
	}
	for _, tt := range tests {
		if got := equalValues(decoded(t, tt.a), decoded(t, tt.b)); got != tt.want {
			t.Errorf("equalValues(%.30s, %.30s) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
	if got := equalValues(1.5, 1.5); got != unsure {
		t.Errorf("equalValues of a type the decoder never builds = %v, want unsure", got)
	}
	if got := equalValues(json.Number("1"), 1.0); got != fail {
		t.Errorf("equalValues(number, float64) = %v, want fail", got)
	}
}

func TestUniqueItems(t *testing.T) {
	tests := []struct {
		raw  string
		want verdict
	}{
		{`[]`, pass},
		{`[1, 2, "1", [1], {"1": 1}, null, true]`, pass},
		{`[1, 1.0]`, fail},
		{`[{"a": [1]}, {"a": [1e0]}]`, fail},
		{`[true, true]`, fail},
		{items(256), pass}, // the bound, written out: maxUniqueItems
		{items(257), unsure},
		{`[1, 2, 1]`, fail},
		{`[` + lit401 + `, 2]`, unsure},
		{`[` + lit401 + `, 2, 2]`, fail},
		{`{"a": 1}`, unsure},
		{`[1,`, unsure},
	}
	for _, tt := range tests {
		if got := uniqueItems([]byte(tt.raw)); got != tt.want {
			t.Errorf("uniqueItems(%.40s) = %v, want %v", tt.raw, got, tt.want)
		}
	}
}

func TestEnumSet(t *testing.T) {
	e := newEnumSet([]any{"a", json.Number("1"), nil, []any{json.Number("2")}})
	tests := []struct {
		raw  string
		want verdict
	}{
		{`1`, pass},
		{`1.0`, pass},
		{`null`, pass},
		{`[2.0]`, pass},
		{`2`, fail},
		{`[2, 2]`, fail},
		{lit401, unsure},
		{`[1,`, unsure},
	}
	for _, tt := range tests {
		if got := e.hasValue([]byte(tt.raw)); got != tt.want {
			t.Errorf("hasValue(%.20s) = %v, want %v", tt.raw, got, tt.want)
		}
	}
	if e.hasString([]byte("a")) != pass || e.hasString([]byte("b")) != fail || e.hasString([]byte("1")) != fail {
		t.Error("hasString is wrong")
	}
	if got := newEnumSet([]any{"x"}).hasValue([]byte(`"x"`)); got != fail {
		t.Errorf("a set of strings only: hasValue = %v, want fail without decoding", got)
	}
}

func TestVerdicts(t *testing.T) {
	if verdictOf(true) != pass || verdictOf(false) != fail {
		t.Error("verdictOf is wrong")
	}
	for in, want := range map[verdict]verdict{pass: fail, fail: pass, unsure: unsure} {
		if got := negate(in); got != want {
			t.Errorf("negate(%v) = %v, want %v", in, got, want)
		}
	}
	// The order pass < fail < unsure is what max over answers relies on.
	if !(pass < fail && fail < unsure) {
		t.Error("the verdicts are not ordered pass < fail < unsure")
	}
	if fmt.Sprint(unsure) != "unsure" {
		t.Error("verdict String")
	}
}
