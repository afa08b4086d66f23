package fast

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/custody-dev/custody/contract/internal/draft2020"
	"github.com/custody-dev/custody/internal/strictjson"
	"github.com/pb33f/jsonschema/v6"
)

// fastAndLibrary compiles a standalone schema both ways, as the registry
// configures the library. fast is nil when the fast path refuses it.
func fastAndLibrary(t *testing.T, schemaJSON string) (fast *Schema, lib *jsonschema.Schema) {
	t.Helper()
	const id = "https://example.test/fast.json"
	tree, err := strictjson.DecodeExact([]byte(schemaJSON))
	if err != nil {
		t.Fatalf("schema %s: %v", schemaJSON, err)
	}
	c := draft2020.NewCompiler(nil, true)
	if err := c.AddResource(id, tree); err != nil {
		t.Fatal(err)
	}
	if lib, err = c.Compile(id); err != nil {
		t.Fatalf("library compile %s: %v", schemaJSON, err)
	}
	fast, err = NewCompiler(tree, id).Compile("")
	if err != nil && !errors.Is(err, ErrUnsupported) {
		t.Fatalf("fast compile %s: %v", schemaJSON, err)
	}
	return fast, lib
}

// libraryAccepts runs the registry's path without a fast path: strict
// decode, then the library.
func libraryAccepts(lib *jsonschema.Schema, doc []byte) bool {
	v, err := strictjson.Decode(doc)
	return err == nil && lib.Validate(v) == nil
}

// fastCase is a document, whether the library accepts it, and whether
// the fast path does: it may leave a valid document to the library, never
// accept an invalid one.
type fastCase struct {
	doc        string
	valid      bool
	fastAccept bool
}

func TestBoundaries(t *testing.T) {
	ok := func(doc string) fastCase { return fastCase{doc, true, true} }
	bad := func(doc string) fastCase { return fastCase{doc, false, false} }
	tests := []struct {
		name, schema string
		cases        []fastCase
	}{
		{"ExclusiveMinimumEdge", `{"exclusiveMinimum": 0.1}`, []fastCase{
			bad(`0.1`), bad(`0.10`), bad(`1e-1`), bad(`0.09999999999999999`),
			ok(`0.10000000000000001`), // rounds to the same float as 0.1
			ok(`0.1000000000000000055511151231257827`), ok(`1`), ok(`"not a number"`),
		}},
		{"MinimumZero", `{"minimum": 0}`, []fastCase{
			ok(`0`), ok(`-0`), ok(`0e5`), ok(`-0.0`), bad(`-0.000000000000000000001`), bad(`-1e-300`),
			bad(`1e400`), // beyond a double: not strict JSON
		}},
		// A schema's bounds are exact; a document's integers stay within
		// ±2^53, the number rules of strict JSON.
		{"MaximumBeyondFloat", `{"maximum": 9007199254740993}`, []fastCase{
			ok(`9007199254740992`), bad(`9007199254740993`), bad(`9007199254740994`), bad(`9007199254740993.5`),
			ok(`9007199254740991.5`),
		}},
		{"BigIntegers", `{"type": "integer", "minimum": 0, "maximum": 18446744073709551615}`, []fastCase{
			ok(`9007199254740992`), bad(`18446744073709551615`), bad(`1.8446744073709551615e19`), bad(`-1`), bad(`1e21`),
		}},
		{"IntegerFraction", `{"type": "integer"}`, []fastCase{
			ok(`1`), ok(`1.0`), bad(`1.5`), ok(`1e2`), ok(`1.5e1`), bad(`1.25e1`), ok(`-0.0`), bad(`1e-400`),
			bad(`123456789012345678901234567890`), bad(`"1"`), bad(`null`),
			bad(`1e1000`), bad(`1e10000`), // beyond a double, beyond the exponent bound
		}},
		{"MultipleOfFraction", `{"multipleOf": 0.01}`, []fastCase{ok(`0.07`), ok(`19.99`), bad(`0.075`), ok(`7`)}},
		{"MultipleOfInteger", `{"multipleOf": 3}`, []fastCase{ok(`9`), ok(`9.0`), bad(`10`), ok(`-3`), ok(`0`), bad(`1.5`)}},
		{"MaxLengthCodePoints", `{"maxLength": 3, "minLength": 2}`, []fastCase{
			ok(`"日本語"`), bad(`"日本語x"`), ok(`"\u00e9\u00e9\u00e9"`), ok(`"😀😀😀"`), ok(`"\ud83d\ude00\ud83d\ude00"`), bad(`"😀"`), ok(`7`),
		}},
		{"AdditionalFalseWithPatterns", `{"properties": {"a": {"type": "string"}, "x-a": {"minimum": 5}},
			"patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": false}`, []fastCase{
			ok(`{"a": "s", "x-1": 1}`), ok(`{"x-a": 7}`), bad(`{"x-a": 7.5}`), bad(`{"x-a": 3}`),
			bad(`{"x-1": "s"}`), bad(`{"b": 1}`), bad(`{"a": 1}`), ok(`{}`), ok(`[]`),
		}},
		{"EnumOfObjects", `{"enum": [{"a": 1, "b": [1, 2]}, "s", null]}`, []fastCase{
			ok(`{"b": [1, 2], "a": 1}`), ok(`{"a": 1.0, "b": [1, 2.0]}`), bad(`{"a": 1, "b": [2, 1]}`),
			bad(`{"a": 1}`), ok(`"s"`), ok(`null`), bad(`"t"`), bad(`false`),
		}},
		{"ConstNull", `{"const": null}`, []fastCase{ok(`null`), bad(`false`), bad(`0`), bad(`"null"`), bad(`{}`), bad(`[]`)}},
		{"ConstEscaped", `{"const": "é\n"}`, []fastCase{ok(`"\u00e9\n"`), ok(`"é\u000a"`), bad(`"é"`)}},
		{"RequiredBeyondBits", `{"required": ["z", "a"], "properties": {"a": true}}`, []fastCase{
			ok(`{"a": 1, "z": 2}`), bad(`{"a": 1}`), bad(`{"z": 1}`),
		}},
		{"UniqueItems", `{"uniqueItems": true}`, []fastCase{
			ok(`[1, "1", [1], {"a": 1}]`), bad(`[1, 1.0]`), bad(`[{"a": 1}, {"a": 1.0}]`), ok(`[]`), ok(`[[1, 2], [2, 1]]`),
		}},
		{"PrefixItems", `{"prefixItems": [{"type": "integer"}, {"type": "string"}], "items": false, "minItems": 1}`, []fastCase{
			ok(`[1]`), ok(`[1, "a"]`), bad(`[1, "a", 2]`), bad(`["a"]`), bad(`[]`),
		}},
		{"OneOf", `{"oneOf": [{"type": "integer"}, {"minimum": 2}]}`, []fastCase{ok(`1`), bad(`3`), bad(`1.5`), ok(`2.5`)}},
		{"AnyOfNot", `{"anyOf": [{"type": "string"}, {"not": {"type": "number"}}]}`, []fastCase{ok(`"s"`), ok(`null`), bad(`1`)}},
		{"RecursiveRef", `{"$defs": {"node": {"type": "object", "additionalProperties": false,
			"properties": {"next": {"$ref": "#/$defs/node"}, "v": {"type": "integer"}}}}, "$ref": "#/$defs/node"}`, []fastCase{
			ok(`{"next": {"next": {"v": 1}}}`), bad(`{"next": {"x": 1}}`), bad(`{"next": {"v": "1"}}`),
		}},
		{"RefWithSiblings", `{"$defs": {"s": {"type": "string"}}, "$ref": "#/$defs/s", "maxLength": 2}`, []fastCase{
			ok(`"ab"`), bad(`"abc"`), bad(`1`),
		}},
		{"DateTime", `{"format": "date-time"}`, []fastCase{
			ok(`"2026-08-14T21:04:00Z"`), bad(`"2026-08-14 21:04:00Z"`), bad(`"2026-02-30T00:00:00Z"`), ok(`5`),
		}},
		{"UUID", `{"format": "uuid"}`, []fastCase{
			ok(`"6F1C2A9E-4b7d-4e8a-9c3f-2d5b8e7a1c40"`), bad(`"6f1c2a9e4b7d-4e8a-9c3f-2d5b8e7a1c40-"`),
			bad(`"6f1c2a9e-4b7d-4e8a-9c3f-2d5b8e7a1c4g"`), bad(`"6f1c2a9e-4b7d-4e8a-9c3f-2d5b8e7a1c4"`), ok(`7`),
		}},
		{"URI", `{"format": "uri"}`, []fastCase{ok(`"https://cdn.example/a%20b"`), bad(`"https://cdn.example/a b"`), bad(`"/a"`)}},
		{"PatternRuns", `{"pattern": "^[0-9a-f]{4}-[a-z][a-z0-9_]+$"}`, []fastCase{
			ok(`"00ff-ab"`), bad(`"00ff-a"`), bad(`"00fF-ab"`), bad(`"00ff-ab\n"`), bad(`"00ff-aé"`),
		}},
		{"PatternUnanchored", `{"pattern": "a+b"}`, []fastCase{ok(`"xaab"`), bad(`"ba"`), ok(`"日aab本"`)}},
		{"TypeArray", `{"type": ["string", "null"]}`, []fastCase{ok(`null`), ok(`"s"`), bad(`1`), bad(`{}`)}},
		{"FalseProperty", `{"properties": {"a": false}}`, []fastCase{ok(`{"b": 1}`), bad(`{"a": 1}`)}},
		{"PropertyCounts", `{"minProperties": 1, "maxProperties": 2, "properties": {"a": true}}`, []fastCase{
			bad(`{}`), ok(`{"a": 1}`), ok(`{"a": 1, "b": 2}`), bad(`{"a": 1, "b": 2, "c": 3}`),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fast, lib := fastAndLibrary(t, tc.schema)
			if fast == nil {
				t.Fatalf("the fast path does not compile %s", tc.schema)
			}
			for _, c := range tc.cases {
				valid := libraryAccepts(lib, []byte(c.doc))
				accepted := fast.Accepts([]byte(c.doc))
				if valid != c.valid {
					t.Errorf("%s: library valid = %v, want %v", c.doc, valid, c.valid)
				}
				if accepted != c.fastAccept || (accepted && !valid) {
					t.Errorf("%s: fast path accepts = %v, want %v (library valid = %v)", c.doc, accepted, c.fastAccept, valid)
				}
			}
		})
	}
}

// TestStrictJSON checks that the fast path accepts nothing the
// strict decoder refuses, even against the empty schema.
func TestStrictJSON(t *testing.T) {
	fast, _ := fastAndLibrary(t, `{"properties": {"a": {}}}`)
	docs := []string{
		``, ` `, `{"a": 1, "a": 2}`, `{"b": 1, "b": 2}`, `{"a": 1, "\u0061": 2}`, `{"b": 1, "\u0062": 2}`,
		`"\ud800"`, `"\udc00\ud800"`, "\"\xff\"", "\"a\x01\"", `{"a": 1,}`, `[1,]`, `01`, `1.`, `-`, `1e`,
		`{"a" 1}`, `{"a": 1} x`, `[1] [2]`, `nul`, `tru`, `"\q"`, `{"a": [1, 2}`, `{"a": {"b": 1, "b": 1}}`,
		strings.Repeat("[", 513) + strings.Repeat("]", 513),
	}
	for _, doc := range docs {
		if _, err := strictjson.Decode([]byte(doc)); err == nil {
			t.Fatalf("decoder accepts %q; the case is wrong", doc)
		}
		if fast.Accepts([]byte(doc)) {
			t.Errorf("fast path accepts %q, which the decoder refuses", doc)
		}
	}
	deep := strings.Repeat("[", 512) + strings.Repeat("]", 512)
	if !fast.Accepts([]byte(deep)) {
		t.Error("fast path refuses nesting the decoder accepts")
	}
}

func TestUnsupported(t *testing.T) {
	tests := map[string]string{
		"IfThenElse":         `{"if": {"type": "string"}, "then": {"minLength": 1}}`,
		"Unevaluated":        `{"properties": {"a": true}, "unevaluatedProperties": false}`,
		"DynamicRef":         `{"$dynamicAnchor": "n", "items": {"$dynamicRef": "#n"}}`,
		"Contains":           `{"contains": {"type": "string"}}`,
		"DependentSchemas":   `{"dependentSchemas": {"a": {"required": ["b"]}}}`,
		"DependentRequired":  `{"dependentRequired": {"a": ["b"]}}`,
		"PropertyNames":      `{"propertyNames": {"maxLength": 3}}`,
		"UnknownFormat":      `{"format": "email"}`,
		"AnchorRef":          `{"$defs": {"a": {"$anchor": "x"}}, "$ref": "#x"}`,
		"NestedID":           `{"$defs": {"a": {"$id": "https://example.test/a", "type": "string"}}, "$ref": "#/$defs/a"}`,
		"OtherDialect":       `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "string"}`,
		"UnknownKeyword":     `{"x-custom": 1}`,
		"PatternNotRE2":      `{"pattern": "^(?!a)"}`,
		"UnsupportedBeneath": `{"properties": {"a": {"items": {"if": true}}}}`,
	}
	for name, schemaJSON := range tests {
		t.Run(name, func(t *testing.T) {
			tree, err := strictjson.DecodeExact([]byte(schemaJSON))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := NewCompiler(tree, "https://example.test/u.json").Compile(""); !errors.Is(err, ErrUnsupported) {
				t.Errorf("Compile = %v, want ErrUnsupported", err)
			}
		})
	}
}

func TestPatternRunsAgreeWithRegexp(t *testing.T) {
	patterns := []string{
		`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$`,
		`^0\.[0-9]+\.[0-9]+$`, `^DF-CAE-[A-Z0-9-]+$`, `^[A-Z0-9 .,!\-]+$`, `^[a-z][a-z0-9_]+$`,
		`^[^a]{2,3}b?$`, `^é+[^é]$`, `^a{0,2}$`, `^[0-9]{2,}x$`,
	}
	inputs := []string{"", "a", "ab", "aab", "b", "éé", "ééx", "é", "xé", "12x", "123x", "1x",
		"0.1.2", "0.1.", "0..1", "DF-CAE-A1", "DF-CAE-", "DF-CAE-a", "A B, C!", "a_1", "a", "A_1",
		"3f1c2a9e-8b7d-4c6e-9f01-2a3b4c5d6e7f", "3f1c2a9e-8b7d-5c6e-9f01-2a3b4c5d6e7f", "ccb", "ccc", "cccb", "日本b"}
	for _, src := range patterns {
		p, err := compilePattern(src)
		if err != nil {
			t.Fatal(err)
		}
		re := regexp.MustCompile(src)
		for _, in := range inputs {
			if got, want := p.match([]byte(in)), re.MatchString(in); got != want {
				t.Errorf("pattern %s on %q: %v, regexp says %v", src, in, got, want)
			}
		}
	}
	for src, wantRuns := range map[string]bool{`^[a-z]+[a-z0-9]$`: false, `^a*b*$`: false, `^[a-z]+-[0-9]+$`: true, `^x`: false, `(?i)^a$`: false, `^(ab)+$`: false} {
		if got := classRuns(src) != nil; got != wantRuns {
			t.Errorf("classRuns(%s) != nil = %v, want %v", src, got, wantRuns)
		}
	}
}

func FuzzPatternRuns(f *testing.F) {
	f.Add(`^[a-c]{1,3}-[0-9]+$`, "ab-12")
	f.Add(`^0\.[0-9]+\.[0-9]+$`, "0.1.2")
	f.Add(`^[^x]?y{2}$`, "éyy")
	f.Fuzz(func(t *testing.T, src, in string) {
		re, err := regexp.Compile(src)
		if err != nil || !utf8.ValidString(in) {
			return
		}
		p, _ := compilePattern(src)
		if got, want := p.match([]byte(in)), re.MatchString(in); got != want {
			t.Fatalf("pattern %q on %q: %v, regexp says %v", src, in, got, want)
		}
	})
}
