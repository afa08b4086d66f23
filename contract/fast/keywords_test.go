package fast

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// verdictOn runs the fast path on doc and returns its inner answer: pass
// only when the value is valid and the document ends after it.
func verdictOn(s *Schema, doc []byte) verdict {
	sc := new(scanner)
	sc.d.Reset(doc)
	sc.d.SkipSpace()
	v := s.root.match(sc, 0)
	if v == pass {
		sc.d.SkipSpace()
		if sc.d.Pos != len(doc) {
			v = unsure
		}
	}
	return v
}

func (v verdict) String() string {
	return [...]string{"pass", "fail", "unsure"}[v]
}

// verdictCase is a document, the fast path's answer for it and whether
// the library accepts it. pass must be valid and fail invalid; unsure
// decides nothing, and the library's answer pins the case.
type verdictCase struct {
	doc   string
	want  verdict
	valid bool
}

func p(doc string) verdictCase             { return verdictCase{doc, pass, true} }
func f(doc string) verdictCase             { return verdictCase{doc, fail, false} }
func u(doc string, valid bool) verdictCase { return verdictCase{doc, unsure, valid} }

// Number literals at the fast path's length bound and one past it.
var (
	lit400 = "1." + strings.Repeat("0", 398)
	lit401 = "1." + strings.Repeat("0", 399)
)

// runVerdicts checks every case of every schema against the fast path's
// answer, Accepts and the library.
func runVerdicts(t *testing.T, tests []verdictTest) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fast, lib := fastAndLibrary(t, tc.schema)
			if fast == nil {
				t.Fatalf("the fast path does not compile %s", tc.schema)
			}
			for _, c := range tc.cases {
				doc := []byte(c.doc)
				if valid := libraryAccepts(lib, doc); valid != c.valid {
					t.Errorf("%.80s: library valid = %v, want %v", c.doc, valid, c.valid)
				}
				if got := verdictOn(fast, doc); got != c.want {
					t.Errorf("%.80s: verdict %v, want %v", c.doc, got, c.want)
				}
				if got := fast.Accepts(doc); got != (c.want == pass) {
					t.Errorf("%.80s: Accepts = %v, want %v", c.doc, got, c.want == pass)
				}
			}
		})
	}
}

type verdictTest struct {
	name, schema string
	cases        []verdictCase
}

func TestTypeKeyword(t *testing.T) {
	runVerdicts(t, []verdictTest{
		{"Null", `{"type": "null"}`, []verdictCase{p(`null`), p(` null `), f(`false`), f(`0`), f(`""`), f(`{}`), f(`[]`), u(`nul`, false), u(`nullx`, false)}},
		{"Boolean", `{"type": "boolean"}`, []verdictCase{p(`true`), p(`false`), f(`null`), f(`1`), f(`"true"`), u(`True`, false)}},
		{"Object", `{"type": "object"}`, []verdictCase{p(`{}`), p(`{"a": {"b": [1]}}`), f(`[]`), f(`null`), f(`"{}"`),
			u(`{"a": 1, "a": 2}`, false), u(`{"a": 1,}`, false), u(`{"a": 1`, false), u(`{a: 1}`, false), u(`{"a" 1}`, false)}},
		{"Array", `{"type": "array"}`, []verdictCase{p(`[]`), p(`[1, [2], {"a": null}]`), f(`{}`), f(`1`), u(`[1,]`, false), u(`[1 2]`, false), u(`[`, false)}},
		{"Number", `{"type": "number"}`, []verdictCase{p(`1`), p(`-1.5e3`), p(`0`), p(`1E+2`), f(`"1"`), f(`null`), u(`01`, false), u(`+1`, false), u(`.5`, false), u(`1.`, false)}},
		{"String", `{"type": "string"}`, []verdictCase{p(`""`), p(`"é\u00e9\n"`), f(`1`), f(`["a"]`), u(`"\ud800"`, false), u(`"a`, false), u("\"\t\"", false), u(`'a'`, false)}},
		{"Integer", `{"type": "integer"}`, []verdictCase{p(`1`), p(`-0`), p(`1.0`), p(`2e0`), p(`2.5e1`), p(`-9007199254740992`), f(`0.5`), f(`1e-1`), f(`true`),
			u(`1e0001`, true), u(lit401, true), p(lit400)}},
		{"IntegerOrString", `{"type": ["integer", "string"]}`, []verdictCase{p(`1`), p(`"a"`), f(`1.5`), f(`null`), f(`{}`)}},
		{"NumberAndInteger", `{"type": ["integer", "number"]}`, []verdictCase{p(`1.5`), p(`1`), p(lit401), f(`"1"`)}},
		{"EveryType", `{"type": ["null", "boolean", "object", "array", "number", "string"]}`, []verdictCase{p(`null`), p(`true`), p(`{}`), p(`[]`), p(`0.5`), p(`"s"`)}},
	})
}

func TestEnumConst(t *testing.T) {
	runVerdicts(t, []verdictTest{
		{"Mixed", `{"enum": [1, "a", [1, 2], {"k": null}, true, null]}`, []verdictCase{
			p(`1`), p(`1.0`), p(`10e-1`), p(`"a"`), p(`"\u0061"`), p(`[1, 2]`), p(`[1.0, 2e0]`), p(`{"k": null}`), p(`true`), p(`null`),
			f(`2`), f(`"b"`), f(`"A"`), f(`[2, 1]`), f(`[1, 2, 3]`), f(`{"k": 0}`), f(`{"k": null, "j": null}`), f(`false`), f(`{}`), f(`[]`),
			u(`[1, 2`, false), u(`{"k": null, "k": null}`, false)}},
		{"Strings", `{"enum": ["a", "b"]}`, []verdictCase{p(`"a"`), p(`"b"`), f(`"c"`), f(`""`), f(`1`), f(`null`), f(`["a"]`)}},
		{"Empty", `{"enum": []}`, []verdictCase{f(`"a"`), f(`1`), f(`null`), f(`{}`)}},
		{"ConstNumber", `{"const": 1.5}`, []verdictCase{p(`1.5`), p(`15e-1`), p(`1.50`), p(`0.15E1`), f(`1.4`), f(`1.5000000000000001`), f(`"1.5"`), u(`[1.5`, false)}},
		{"ConstLongNumber", `{"const": 1}`, []verdictCase{p(lit400), u(lit401, true)}},
		{"ConstArray", `{"const": [1, {"a": [true]}]}`, []verdictCase{p(`[1, {"a": [true]}]`), p(`[1.0,{"a":[true]}]`), f(`[1, {"a": [false]}]`), f(`[{"a": [true]}, 1]`), f(`[1]`)}},
		{"ConstEmptyObject", `{"const": {}}`, []verdictCase{p(`{}`), p(`{ }`), f(`{"a": 1}`), f(`[]`), f(`null`)}},
		{"ConstFalse", `{"const": false}`, []verdictCase{p(`false`), f(`0`), f(`null`), f(`true`), f(`"false"`)}},
		{"EnumAndConst", `{"enum": [1, 2, 3], "const": 2}`, []verdictCase{p(`2`), p(`2.0`), f(`1`), f(`3`), f(`4`)}},
		{"EnumWithType", `{"type": "string", "enum": ["a", 1]}`, []verdictCase{p(`"a"`), f(`1`), f(`"b"`)}},
	})
}

func TestStringKeywords(t *testing.T) {
	runVerdicts(t, []verdictTest{
		{"MinLength", `{"minLength": 2}`, []verdictCase{p(`"ab"`), p(`"日本"`), p(`"\u00e9\u00e9"`), f(`"a"`), f(`"日"`), f(`""`), p(`5`), p(`null`), p(`["a"]`)}},
		{"MaxLengthZero", `{"maxLength": 0}`, []verdictCase{p(`""`), f(`"a"`), f(`"\n"`), p(`{}`)}},
		{"ExactlyOne", `{"minLength": 1, "maxLength": 1}`, []verdictCase{p(`"\u00e9"`), p(`"😀"`), p(`"\ud83d\ude00"`), p(`"\n"`), f(`"\ud83d\ude00\ud83d\ude00"`), f(`"ab"`), f(`""`)}},
		{"MinLengthWritten2Point0", `{"minLength": 2.0}`, []verdictCase{p(`"ab"`), f(`"a"`)}},
		{"PatternPrefix", `{"pattern": "^a"}`, []verdictCase{p(`"abc"`), p(`"a"`), f(`"ba"`), f(`""`), p(`1`)}},
		{"PatternNonASCII", `{"pattern": "é$"}`, []verdictCase{p(`"café"`), p(`"caf\u00e9"`), f(`"cafe"`), f(`"éa"`)}},
		{"PatternEscapedInput", `{"pattern": "^[a-z]+\n$"}`, []verdictCase{p(`"ab\n"`), f(`"ab"`), f(`"ab\n\n"`)}},
		{"PatternAlternation", `{"pattern": "^(red|green)$"}`, []verdictCase{p(`"red"`), p(`"green"`), f(`"blue"`), f(`"redgreen"`)}},
		{"DateTime", `{"format": "date-time"}`, []verdictCase{p(`"2026-08-14T21:04:00.123+02:00"`), p(`"2026-08-14t21:04:00z"`),
			f(`"2026-08-14T21:04:00"`), f(`"2026-13-01T00:00:00Z"`), f(`"2026-08-14"`), f(`""`), p(`null`)}},
		{"URIReference", `{"format": "uri-reference"}`, []verdictCase{p(`"/a/b"`), p(`"a?b#c"`), p(`"https://x.example/"`), f(`"a b"`), f(`"\\\\x"`), p(`1`)}},
		{"URIAbsolute", `{"format": "uri"}`, []verdictCase{p(`"urn:isbn:0451450523"`), p(`"https://x.example/?q=1#f"`), f(`"a"`), f(`"//x.example"`)}},
		{"UUIDCase", `{"format": "uuid"}`, []verdictCase{p(`"00000000-0000-0000-0000-000000000000"`), f(`"{00000000-0000-0000-0000-000000000000}"`), f(`"00000000000000000000000000000000"`)}},
		{"AllStringRules", `{"type": "string", "minLength": 3, "pattern": "^[a-z]+$", "enum": ["abc", "ab", "ABC", "abcd"], "maxLength": 3}`, []verdictCase{
			p(`"abc"`), f(`"ab"`), f(`"ABC"`), f(`"abcd"`), f(`"xyz"`), f(`3`)}},
	})
}

func TestNumberKeywords(t *testing.T) {
	runVerdicts(t, []verdictTest{
		{"Maximum", `{"maximum": 10}`, []verdictCase{p(`10`), p(`10.0`), p(`1e1`), p(`9.999999999999999999`), p(`-1e308`), f(`10.000000000000001`), f(`11`), f(`1e2`), p(`"11"`)}},
		{"ExclusiveMaximum", `{"exclusiveMaximum": 10}`, []verdictCase{f(`10`), f(`1e1`), f(`10.00`), p(`9.999999999999999999`), p(`-10`), f(`10.000000000000000001`)}},
		{"Range", `{"minimum": -5, "maximum": 5}`, []verdictCase{p(`-5`), p(`5`), p(`0`), p(`-0`), f(`-5.0000000000000001`), f(`6`), f(`-6`), p(`true`)}},
		{"ExclusiveMinimumNegative", `{"exclusiveMinimum": -1e-3}`, []verdictCase{p(`0`), f(`-0.001`), f(`-1e-3`), f(`-0.0010`), p(`-0.000999`), p(`-0.00099999999999999999999`)}},
		{"MinimumHuge", `{"minimum": 1e300}`, []verdictCase{p(`1e300`), p(`1.0e300`), f(`9.99e299`), p(`1e308`), f(`-1e308`)}},
		{"MinimumLongLiteral", `{"minimum": 1}`, []verdictCase{p(lit400), u(lit401, true), p(`1e300`), u(`1e0001`, true)}},
		{"MaximumLongLiteral", `{"maximum": 0}`, []verdictCase{f(lit400), u(lit401, false)}},
		{"MultipleOfTenth", `{"multipleOf": 0.1}`, []verdictCase{p(`0.3`), p(`1e-1`), p(`-0.2`), p(`0`), p(`7`), f(`0.35`), f(`0.01`), p(`"0.35"`)}},
		{"MultipleOfThousandth", `{"multipleOf": 1e-3}`, []verdictCase{p(`0.007`), p(`5`), f(`0.0075`), f(`1e-4`)}},
		{"MultipleOfSevenInteger", `{"multipleOf": 7, "type": "integer"}`, []verdictCase{p(`49`), p(`-7`), p(`7e1`), p(`0`), f(`50`), f(`3.5`), f(`"7"`)}},
		{"MultipleOfEighteenDigits", `{"multipleOf": 123456789012345678}`, []verdictCase{p(`0`), f(`123456789`), f(`1.5`)}},
		{"MultipleOfNineteenDigits", `{"multipleOf": 1234567890123456789}`, []verdictCase{p(`0`), f(`7`), f(`0.5`)}},
		{"MultipleOfFraction", `{"multipleOf": 2.5}`, []verdictCase{p(`5`), p(`7.5`), p(`-2.5`), p(`25e-1`), f(`6`), f(`2.4`)}},
		{"MultipleOfLongLiteral", `{"multipleOf": 1}`, []verdictCase{p(lit400), u(lit401, true), p(`9007199254740992`), p(`-9007199254740992`)}},
		{"BoundsAndMultiple", `{"minimum": 0, "exclusiveMaximum": 1, "multipleOf": 0.25}`, []verdictCase{p(`0`), p(`0.25`), p(`0.75`), f(`1`), f(`-0.25`), f(`0.3`)}},
		{"AllBounds", `{"allOf": [{"minimum": 1}, {"maximum": 3}, {"exclusiveMinimum": 1.5}, {"exclusiveMaximum": 2.5}]}`, []verdictCase{
			p(`2`), f(`1.5`), f(`2.5`), f(`0`), f(`3`), p(`1.50000000000000000001`)}},
	})
}

// propsSchema has n integer properties p0 ... p(n-1), requires the
// first and the last, and allows no other member.
func propsSchema(n int) string {
	var b strings.Builder
	b.WriteString(`{"type": "object", "additionalProperties": false, "properties": {`)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `"p%d": {"type": "integer"}`, i)
	}
	fmt.Fprintf(&b, `}, "required": ["p0", "p%d"]}`, n-1)
	return b.String()
}

// object returns an object with members p0 ... p(n-1) (skipping
// those in skip, and with the value v for those in set).
func object(n int, skip map[int]bool, set map[int]string, extra string) string {
	var parts []string
	for i := range n {
		if skip[i] {
			continue
		}
		v := "1"
		if s, ok := set[i]; ok {
			v = s
		}
		parts = append(parts, fmt.Sprintf(`"p%d": %s`, i, v))
	}
	if extra != "" {
		parts = append(parts, extra)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// keys returns an object with n distinct members k0 ... k(n-1).
func keys(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`"k%d": %d`, i, i)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func TestObjectKeywords(t *testing.T) {
	runVerdicts(t, []verdictTest{
		{"Properties", `{"properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}`, []verdictCase{
			p(`{}`), p(`{"a": 1, "b": "x", "c": null}`), p(`{"b":"x","a":1}`), f(`{"a": "1"}`), f(`{"b": 2}`), f(`{"a": 1, "b": 2}`),
			u(`{"a": 1, "a": 1}`, false), u(`{"c": 1, "c": 2}`, false), u(`{"\u0063": 1, "c": 2}`, false), u(`{"a": 1 "b": "x"}`, false),
			p(`[1]`), p(`"s"`), p(`{"\"": 1, "\\": 2}`)}},
		{"EscapedNames", `{"properties": {"a~b": {"const": 1}, "c/d": {"const": 2}}}`, []verdictCase{
			p(`{"a~b": 1, "c/d": 2}`), p(`{"a\u007eb": 1}`), f(`{"a~b": 2}`), f(`{"c/d": 1}`), f(`{"c\/d": 1}`), p(`{"a~0b": 2, "c~1d": 1}`)}},
		{"AdditionalSchema", `{"additionalProperties": {"type": "string"}}`, []verdictCase{p(`{"x": "1"}`), p(`{}`), f(`{"x": 1}`), f(`{"x": "1", "y": null}`)}},
		{"AdditionalAfterProperties", `{"properties": {"a": true}, "additionalProperties": {"type": "string"}}`, []verdictCase{
			p(`{"a": 1, "b": "s"}`), f(`{"a": 1, "b": 2}`)}},
		{"PatternsBoth", `{"patternProperties": {"^a": {"minimum": 0}, "b$": {"maximum": 10}}, "additionalProperties": false}`, []verdictCase{
			p(`{"ab": 5}`), p(`{"a": -0, "b": 10}`), f(`{"ab": -1}`), f(`{"ab": 11}`), f(`{"c": 1}`), p(`{"ac": 100, "cb": -100}`), f(`{"ab": 5, "x": 1}`)}},
		{"PatternAndProperty", `{"properties": {"ab": {"type": "integer"}}, "patternProperties": {"^a": {"minimum": 5}}}`, []verdictCase{
			p(`{"ab": 5}`), f(`{"ab": 4}`), f(`{"ab": 5.5}`), f(`{"ax": 4}`), p(`{"ax": 5.5}`)}},
		{"Required", `{"required": ["a", "b"]}`, []verdictCase{p(`{"a": 1, "b": 2}`), p(`{"b": null, "c": 1, "a": 0}`), f(`{"a": 1}`), f(`{}`), p(`[]`), p(`1`)}},
		{"RequiredEmpty", `{"required": []}`, []verdictCase{p(`{}`)}},
		{"RequiredWithProperty", `{"properties": {"a": {"type": "string"}}, "required": ["a", "z"]}`, []verdictCase{
			p(`{"a": "s", "z": 1}`), f(`{"z": 1}`), f(`{"a": "s"}`), f(`{"a": 1, "z": 1}`)}},
		{"MinProperties", `{"minProperties": 2}`, []verdictCase{f(`{"a": 1}`), p(`{"a": 1, "b": 1}`), f(`{}`), p(`"x"`)}},
		{"MaxPropertiesZero", `{"maxProperties": 0}`, []verdictCase{p(`{}`), f(`{"a": 1}`), p(`[1]`)}},
		{"PropertyCountsMixed", `{"properties": {"a": true, "b": true}, "minProperties": 2, "maxProperties": 3}`, []verdictCase{
			f(`{"a": 1}`), f(`{"x": 1}`), p(`{"a": 1, "x": 1}`), p(`{"x": 1, "y": 1}`), p(`{"a": 1, "b": 1, "x": 1}`), f(`{"a": 1, "b": 1, "x": 1, "y": 1}`)}},
		{"NestedNamesPerObject", `{"properties": {"a": {"type": "object"}}}`, []verdictCase{
			p(`{"x": 1, "a": {"x": 2}, "y": 3}`), p(`{"a": {"y": 1}, "y": 2}`), u(`{"x": 1, "a": {"x": 2, "x": 3}}`, false), u(`{"x": 1, "a": {}, "x": 2}`, false), f(`{"a": []}`)}},
		{"SeventyProperties", propsSchema(70), []verdictCase{
			p(object(70, nil, nil, "")), p(object(70, map[int]bool{1: true, 68: true}, nil, "")),
			f(object(70, map[int]bool{69: true}, nil, "")), f(object(70, map[int]bool{0: true}, nil, "")),
			f(object(70, nil, map[int]string{65: `"x"`}, "")), f(object(70, nil, map[int]string{3: `1.5`}, "")),
			f(object(70, nil, nil, `"q": 1`)),
			u(object(70, nil, nil, `"p66": 2`), false), u(object(70, nil, nil, `"p1": 2`), false), u(object(70, nil, nil, `"p\u0036\u0039": 2`), false)}},
		{"ManyKeys", `{"type": "object"}`, []verdictCase{p(keys(128)), u(keys(129), true), f(`[` + keys(maxFastKeys) + `]`)}},
	})
}

// items returns an array of n distinct integers.
func items(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprint(i)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func TestArrayKeywords(t *testing.T) {
	runVerdicts(t, []verdictTest{
		{"Items", `{"items": {"type": "integer"}}`, []verdictCase{p(`[]`), p(`[1, 2]`), p(`[ 1 , 2 ]`), f(`[1, "2"]`), f(`["1", 2]`), p(`{}`), u(`[1,,2]`, false), u(`[,1]`, false), u(`[1 2]`, false)}},
		{"ItemsFalse", `{"items": false}`, []verdictCase{p(`[]`), f(`[1]`), f(`[[]]`)}},
		{"PrefixOnly", `{"prefixItems": [{"const": 1}]}`, []verdictCase{p(`[1, "anything"]`), p(`[1]`), p(`[]`), f(`[2]`), f(`[2, 1]`)}},
		{"PrefixTrueFalse", `{"prefixItems": [true, false]}`, []verdictCase{p(`[1]`), p(`[]`), f(`[1, 2]`), f(`[1, 2, 3]`)}},
		{"PrefixAndItems", `{"prefixItems": [{"type": "string"}], "items": {"type": "integer"}}`, []verdictCase{p(`["a", 1, 2]`), p(`["a"]`), f(`["a", "b"]`), f(`[1]`)}},
		{"Counts", `{"minItems": 2, "maxItems": 3}`, []verdictCase{f(`[1]`), f(`[]`), p(`[1, 2]`), p(`[1, 2, 3]`), f(`[1, 2, 3, 4]`), p(`"not an array"`)}},
		{"MaxItemsZero", `{"maxItems": 0}`, []verdictCase{p(`[]`), f(`[null]`)}},
		{"UniqueAtBound", `{"uniqueItems": true}`, []verdictCase{p(items(maxUniqueItems)), u(items(maxUniqueItems+1), true), u(`[`+lit401+`, 2]`, true),
			f(`[` + lit401 + `, 1, 1]`), f(`[[1, 2], [1.0, 2]]`), f(`[null, null]`), p(`[null, false, 0, "", [], {}]`), f(`["a", "\u0061"]`), p(`[1]`)}},
		{"UniqueFalse", `{"uniqueItems": false}`, []verdictCase{p(`[1, 1]`), p(`[]`)}},
		{"NestedArrays", `{"items": {"items": {"type": "string"}, "maxItems": 1}}`, []verdictCase{p(`[[], ["a"]]`), f(`[["a", "b"]]`), f(`[[1]]`), p(`[{}]`)}},
	})
}

func TestApplicators(t *testing.T) {
	runVerdicts(t, []verdictTest{
		{"AllOf", `{"allOf": [{"type": "number"}, {"minimum": 0}, {"maximum": 1}]}`, []verdictCase{p(`0.5`), p(`0`), p(`1`), f(`2`), f(`-1`), f(`"a"`), u(`0.5 x`, false), u(`[`, false)}},
		{"AnyOf", `{"anyOf": [{"type": "string"}, {"minimum": 0}]}`, []verdictCase{p(`"a"`), p(`1`), p(`null`), f(`-1`)}},
		{"AnyOfUnsureBranch", `{"anyOf": [{"multipleOf": 1}, {"type": "string"}]}`, []verdictCase{u(lit401, true), p(`"s"`), p(`2`), f(`2.5`)}},
		{"AnyOfPassDespiteUnsure", `{"anyOf": [{"multipleOf": 1}, {"type": "number"}]}`, []verdictCase{p(lit401)}},
		{"OneOf", `{"oneOf": [{"type": "integer"}, {"type": "number"}]}`, []verdictCase{f(`1`), p(`1.5`), f(`"x"`)}},
		{"OneOfUnsure", `{"oneOf": [{"multipleOf": 1}, {"type": "string"}]}`, []verdictCase{u(lit401, true), f(`"s"`), p(`true`), p(`2`), f(`2.5`)}},
		{"TwoOneOfsInAllOf", `{"allOf": [{"oneOf": [{"const": 1}, {"const": 2}]}, {"oneOf": [{"const": 2}, {"const": 3}]}]}`, []verdictCase{p(`2`), f(`1`), f(`3`)}},
		{"Not", `{"not": {"type": "string"}}`, []verdictCase{p(`1`), p(`null`), f(`"s"`), u(`"s`, false)}},
		{"NotUnsure", `{"not": {"multipleOf": 1}}`, []verdictCase{u(lit401, false), p(`1.5`), f(`2`)}},
		{"NotEmpty", `{"not": {}}`, []verdictCase{f(`1`), f(`{}`), f(`null`)}},
		{"NotFalse", `{"not": false}`, []verdictCase{p(`1`), p(`{}`)}},
		{"DoubleNot", `{"not": {"not": {"type": "integer"}}}`, []verdictCase{p(`1`), f(`1.5`)}},
		{"LocalAndApplied", `{"type": "object", "required": ["a"], "anyOf": [{"required": ["b"]}, {"required": ["c"]}]}`, []verdictCase{
			p(`{"a": 1, "b": 1}`), p(`{"a": 1, "c": 1}`), f(`{"a": 1}`), f(`{"b": 1}`), f(`[]`)}},
		{"AppliedInsideProperty", `{"properties": {"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}`, []verdictCase{
			p(`{"a": "s"}`), p(`{"a": null}`), f(`{"a": 1}`), u(`{"a": "s", "a": null}`, false), u(`{"a": [1,]}`, false)}},
		{"FalseRoot", `false`, []verdictCase{f(`1`), f(`{}`), f(`null`)}},
		{"TrueRoot", `true`, []verdictCase{p(`1`), p(`{"a": [null]}`), u(`[`, false), u(``, false), u(`1 2`, false)}},
		{"EmptyRoot", `{}`, []verdictCase{p(`"s"`), p(` [ ] `), u(`{"a": 1, "a": 2}`, false)}},
	})
}

func TestRefs(t *testing.T) {
	runVerdicts(t, []verdictTest{
		{"DefsBothSpellings", `{"$defs": {"pos": {"minimum": 0}}, "properties": {"a": {"$ref": "#/$defs/pos"}, "b": {"$ref": "https://example.test/fast.json#/$defs/pos"}}}`, []verdictCase{
			p(`{"a": 1, "b": 2}`), f(`{"a": -1}`), f(`{"b": -1}`)}},
		{"Root", `{"type": "object", "properties": {"next": {"$ref": "#"}}}`, []verdictCase{p(`{"next": {"next": {}}}`), f(`{"next": 1}`), f(`{"next": {"next": []}}`)}},
		{"PercentEncoded", `{"$defs": {"a b": {"const": 1}}, "$ref": "#/$defs/a%20b"}`, []verdictCase{p(`1`), f(`2`)}},
		{"PointerEscape", `{"$defs": {"a/b": {"const": 1}, "c~d": {"const": 2}}, "properties": {"x": {"$ref": "#/$defs/a~1b"}, "y": {"$ref": "#/$defs/c~0d"}}}`, []verdictCase{
			p(`{"x": 1, "y": 2}`), f(`{"x": 2}`), f(`{"y": 1}`)}},
		{"IntoArray", `{"allOf": [true, {"type": ["string", "object"]}], "properties": {"x": {"$ref": "#/allOf/1"}}}`, []verdictCase{
			p(`{"x": "s"}`), p(`{"x": {}}`), f(`{"x": 1}`), f(`1`)}},
		{"Chain", `{"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/c"}, "c": {"type": "null"}}, "$ref": "#/$defs/a"}`, []verdictCase{p(`null`), f(`0`)}},
		{"Shared", `{"$defs": {"s": {"type": "string"}}, "items": {"$ref": "#/$defs/s"}, "additionalProperties": {"$ref": "#/$defs/s"}}`, []verdictCase{
			p(`["a"]`), f(`[1]`), p(`{"k": "v"}`), f(`{"k": 1}`)}},
		{"Annotations", `{"$schema": "https://json-schema.org/draft/2020-12/schema#", "$id": "https://example.test/fast.json", "title": "t", "description": "d", "default": 5,
			"examples": [1], "$comment": "c", "deprecated": true, "readOnly": true, "writeOnly": false, "type": "integer"}`, []verdictCase{p(`1`), f(`"a"`)}},
	})
}

// TestRefCycle: a cycle of references that never moves into the
// instance ends as unsure.
func TestRefCycle(t *testing.T) {
	for name, schemaJSON := range map[string]string{
		"Self":   `{"$ref": "#"}`,
		"Pair":   `{"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}`,
		"AllOf":  `{"allOf": [{"$ref": "#"}]}`,
		"Nested": `{"$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}], "type": "integer"}}, "$ref": "#/$defs/a"}`,
	} {
		t.Run(name, func(t *testing.T) {
			s := compileFast(t, schemaJSON)
			if got := verdictOn(s, []byte(`1`)); got != unsure {
				t.Errorf("verdict %v, want unsure", got)
			}
			if s.Accepts([]byte(`1`)) {
				t.Error("Accepts a document under a reference cycle")
			}
		})
	}
}

// TestAcceptsConcurrent runs one schema from several goroutines, a fixed
// count of documents each, with escaped member names that the scanner
// copies.
func TestAcceptsConcurrent(t *testing.T) {
	fast, _ := fastAndLibrary(t, `{"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "string"}}`)
	docs := []struct {
		doc string
		ok  bool
	}{
		{`{"a": 1, "\u0062": "x", "c": "y"}`, true},
		{`{"a": "1"}`, false},
		{`{"\u0062": "x", "\u0062": "y"}`, false},
		{keys(3), false},
		{`{"b": "x", "c": "y", "d": "z"}`, true},
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				d := docs[(g+i)%len(docs)]
				if fast.Accepts([]byte(d.doc)) != d.ok {
					errs <- d.doc
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for doc := range errs {
		t.Errorf("a concurrent Accepts(%s) is wrong", doc)
	}
}
