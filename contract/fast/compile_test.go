package fast

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/custody-dev/custody/internal/strictjson"
)

const testID = "https://example.test/u.json"

// compileFast compiles a standalone schema with the fast path alone.
func compileFast(t *testing.T, schemaJSON string) *Schema {
	t.Helper()
	tree, err := strictjson.DecodeExact([]byte(schemaJSON))
	if err != nil {
		t.Fatalf("schema %s: %v", schemaJSON, err)
	}
	s, err := NewCompiler(tree, testID).Compile("")
	if err != nil {
		t.Fatalf("Compile(%s) = %v", schemaJSON, err)
	}
	return s
}

// TestCompileRefusals: every keyword value the fast path does not reason
// about is ErrUnsupported, naming where, so that the library alone
// judges; none is a silent pass.
func TestCompileRefusals(t *testing.T) {
	tests := []struct{ name, schema, at string }{
		{"ErrRootString", `"string"`, `at ""`},
		{"ErrRootNumber", `5`, `at ""`},
		{"ErrSchemaInSubschema", `{"properties": {"a": {"$schema": "https://json-schema.org/draft/2020-12/schema"}}}`, "/properties/a"},
		{"ErrIDInItems", `{"items": {"$id": "https://example.test/b"}}`, "nested $id"},
		{"ErrItemsArray", `{"items": [true]}`, "/items"},
		{"ErrItemsNumber", `{"items": 5}`, "not a schema"},
		{"ErrTypeUnknown", `{"type": "any"}`, "type any"},
		{"ErrTypeEmpty", `{"type": []}`, "empty type array"},
		{"ErrTypeNumberValue", `{"type": 5}`, "type 5"},
		{"ErrTypeInArray", `{"type": ["string", "date"]}`, "type date"},
		{"ErrEnumNotArray", `{"enum": 5}`, "enum is not an array"},
		{"ErrMinLengthNegative", `{"minLength": -1}`, "minLength -1"},
		{"ErrMinLengthFraction", `{"minLength": 1.5}`, "minLength 1.5"},
		{"ErrMinLengthString", `{"minLength": "2"}`, "minLength 2"},
		{"ErrMaxItemsHuge", `{"maxItems": 2147483649}`, "maxItems"},
		{"ErrMinPropertiesFraction", `{"minProperties": 0.5}`, "minProperties"},
		{"ErrMinimumString", `{"minimum": "0"}`, "minimum 0"},
		{"ErrExclusiveBool", `{"exclusiveMinimum": true}`, "exclusiveMinimum true"},
		{"ErrMinimumLongExponent", `{"minimum": 1e1000}`, "minimum 1e1000"},
		{"ErrMaximumLong", `{"maximum": ` + lit401 + `}`, "maximum"},
		{"ErrMultipleOfZero", `{"multipleOf": 0}`, "multipleOf 0"},
		{"ErrMultipleOfNegative", `{"multipleOf": -1}`, "multipleOf -1"},
		{"ErrMultipleOfLongExponent", `{"multipleOf": 1e-1000}`, "multipleOf"},
		{"ErrRequiredString", `{"required": "a"}`, "required"},
		{"ErrRequiredNumber", `{"required": ["a", 1]}`, "required"},
		{"ErrUniqueString", `{"uniqueItems": "yes"}`, "uniqueItems"},
		{"ErrPropertiesArray", `{"properties": []}`, "/properties"},
		{"ErrPatternPropertiesArray", `{"patternProperties": []}`, "/patternProperties"},
		{"ErrPatternPropertiesBad", `{"patternProperties": {"(": true}}`, "pattern"},
		{"ErrPatternBad", `{"pattern": "[a-"}`, "pattern"},
		{"ErrAllOfEmpty", `{"allOf": []}`, "/allOf"},
		{"ErrAnyOfObject", `{"anyOf": {}}`, "/anyOf"},
		{"ErrOneOfBeneath", `{"oneOf": [true, {"if": true}]}`, "/oneOf/1"},
		{"ErrNotBeneath", `{"not": {"contains": true}}`, "/not"},
		{"ErrRefAnchor", `{"$ref": "#foo"}`, "$ref"},
		{"ErrRefOtherDocument", `{"$ref": "other.json#/a"}`, "$ref"},
		{"ErrRefNoFragment", `{"$ref": "https://example.test/u.json"}`, "$ref"},
		{"ErrRefNotString", `{"$ref": 5}`, "$ref"},
		{"ErrRefBadEscape", `{"$ref": "#/$defs/%zz"}`, "$ref"},
		{"ErrRefNothingThere", `{"$ref": "#/nothing"}`, "nothing there"},
		{"ErrRefLeadingZero", `{"allOf": [true, true], "properties": {"a": {"$ref": "#/allOf/01"}}}`, "nothing there"},
		{"ErrRefOutOfRange", `{"allOf": [true], "properties": {"a": {"$ref": "#/allOf/1"}}}`, "nothing there"},
		{"ErrRefNegative", `{"allOf": [true], "properties": {"a": {"$ref": "#/allOf/-1"}}}`, "nothing there"},
		{"ErrRefIntoScalar", `{"minimum": 1, "properties": {"a": {"$ref": "#/minimum/x"}}}`, "nothing there"},
		{"ErrRefToNonSchema", `{"minimum": 1, "properties": {"a": {"$ref": "#/minimum"}}}`, "not a schema"},
		{"ErrDialectOld", `{"$schema": "http://json-schema.org/draft-04/schema#"}`, "dialect"},
		{"ErrDialect2019", `{"$schema": "https://json-schema.org/draft/2019-09/schema"}`, "dialect"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree, err := strictjson.DecodeExact([]byte(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			s, err := NewCompiler(tree, testID).Compile("")
			if s != nil || !errors.Is(err, ErrUnsupported) {
				t.Fatalf("Compile(%s) = %v, %v; want ErrUnsupported", tt.schema, s, err)
			}
			if !strings.Contains(err.Error(), tt.at) {
				t.Errorf("error %q does not say %q", err, tt.at)
			}
		})
	}
}

func TestCompileAccepts(t *testing.T) {
	for name, schemaJSON := range map[string]string{
		"DialectWithHash":     `{"$schema": "https://json-schema.org/draft/2020-12/schema#"}`,
		"DialectNoHash":       `{"$schema": "https://json-schema.org/draft/2020-12/schema"}`,
		"RootID":              `{"$id": "https://example.test/other.json", "type": "string"}`,
		"RefByID":             `{"$defs": {"a": true}, "$ref": "https://example.test/u.json#/$defs/a"}`,
		"RefEmptyFragment":    `{"properties": {"a": {"$ref": "#"}}}`,
		"IDInsideAnnotation":  `{"default": {"$id": "x"}, "examples": [{"$id": "y"}]}`,
		"MaxLengthAtBound":    `{"maxLength": 2147483648}`,
		"CountWithExponent":   `{"minItems": 2e0, "maxItems": 1E1}`,
		"UnusedBadDefinition": `{"$defs": {"bad": {"if": true}}, "type": "string"}`,
	} {
		t.Run(name, func(t *testing.T) { compileFast(t, schemaJSON) })
	}
}

// TestCompileForgetsFailedNodes: the nodes a failed compile made are
// forgotten, those of earlier compiles are kept and shared.
func TestCompileForgetsFailedNodes(t *testing.T) {
	tree, err := strictjson.DecodeExact([]byte(`{"$defs": {
		"good": {"type": "string"},
		"other": {"type": "integer"},
		"bad": {"properties": {"x": {"$ref": "#/$defs/good"}, "o": {"$ref": "#/$defs/other"}, "y": {"if": true}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	c := NewCompiler(tree, testID)
	other, err := c.Compile("/$defs/other")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compile("/$defs/bad"); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Compile(bad) = %v, want ErrUnsupported", err)
	}
	for _, ptr := range []string{"/$defs/bad", "/$defs/bad/properties/x", "/$defs/good", "/$defs/bad/properties/y"} {
		if _, ok := c.memo[ptr]; ok {
			t.Errorf("%s is still memoized after a failed compile", ptr)
		}
	}
	if c.memo["/$defs/other"] != other.root {
		t.Error("a node of an earlier compile was forgotten")
	}
	good, err := c.Compile("/$defs/good")
	if err != nil || !good.Accepts([]byte(`"s"`)) || good.Accepts([]byte(`1`)) {
		t.Fatalf("Compile(good) after the failure = %v", err)
	}
	again, err := c.Compile("/$defs/good")
	if err != nil || again.root != good.root {
		t.Errorf("a second compile of one pointer does not share its node")
	}
	if _, err := c.Compile("/$defs/missing"); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Compile(missing) = %v", err)
	}
}

// TestDelegate: a schema with nothing but a $ref delegates to its target;
// one with more does not.
func TestDelegate(t *testing.T) {
	tree, _ := strictjson.DecodeExact([]byte(`{"$defs": {"s": {"type": "string"}, "r": {"$ref": "#/$defs/s"}, "m": {"$ref": "#/$defs/s", "maxLength": 1}, "a": {"$ref": "#/$defs/s", "not": true}}}`))
	c := NewCompiler(tree, testID)
	for ptr, delegates := range map[string]bool{"/$defs/r": true, "/$defs/m": false, "/$defs/a": false, "/$defs/s": false} {
		s, err := c.Compile(ptr)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.root.delegate != nil; got != delegates {
			t.Errorf("%s delegates = %v, want %v", ptr, got, delegates)
		}
		if delegates && s.root.delegate != c.memo["/$defs/s"] {
			t.Errorf("%s delegates to another node", ptr)
		}
	}
}

func TestCount(t *testing.T) {
	tests := []struct {
		in   any
		want int
		ok   bool
	}{
		{json.Number("0"), 0, true},
		{json.Number("7"), 7, true},
		{json.Number("2.0"), 2, true},
		{json.Number("3e2"), 300, true},
		{json.Number("2147483648"), 1 << 31, true},
		{json.Number("2147483649"), 0, false},
		{json.Number("99999999999999999999"), 0, false},
		{json.Number("-1"), 0, false},
		{json.Number("-0"), 0, true},
		{json.Number("0.5"), 0, false},
		{"3", 0, false},
		{3, 0, false},
		{nil, 0, false},
	}
	for _, tt := range tests {
		if got, ok := count(tt.in); got != tt.want || ok != tt.ok {
			t.Errorf("count(%#v) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestNamedTypesAndFormats(t *testing.T) {
	for name, want := range map[string]typeSet{"null": typeNull, "boolean": typeBoolean, "object": typeObject, "array": typeArray,
		"number": typeNumber, "string": typeString, "integer": typeInteger, "": 0, "Integer": 0, "float": 0} {
		if got := typeNamed(name); got != want {
			t.Errorf("typeNamed(%q) = %d, want %d", name, got, want)
		}
	}
	for v, want := range map[any]formatKind{"date-time": formatDateTime, "uri": formatURI, "uri-reference": formatURIReference,
		"uuid": formatUUID, "date": noFormat, "email": noFormat, "": noFormat, 5: noFormat} {
		if got := formatNamed(v); got != want {
			t.Errorf("formatNamed(%v) = %d, want %d", v, got, want)
		}
	}
	if !noFormat.check([]byte("anything")) {
		t.Error("noFormat refuses a string")
	}
	var all typeSet
	if !all.allows(typeString) || typeString.allows(typeNumber) || !(typeString | typeNull).allows(typeNull) {
		t.Error("typeSet.allows is wrong")
	}
}

func TestStringList(t *testing.T) {
	tests := []struct {
		in   any
		want []string
		ok   bool
	}{
		{[]any{}, []string{}, true},
		{[]any{"a", "b"}, []string{"a", "b"}, true},
		{[]any{"a", 1}, nil, false},
		{[]any{nil}, nil, false},
		{"a", nil, false},
		{nil, nil, false},
	}
	for _, tt := range tests {
		got, ok := stringList(tt.in)
		if ok != tt.ok || strings.Join(got, ",") != strings.Join(tt.want, ",") || (ok && got == nil) {
			t.Errorf("stringList(%#v) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestResolve(t *testing.T) {
	tree, err := strictjson.DecodeExact([]byte(`{"a": {"b/c": {"d~e": 1}}, "l": [10, 20], "": {"x": 2}, "n": {"$id": "https://example.test/n", "k": 3}}`))
	if err != nil {
		t.Fatal(err)
	}
	c := NewCompiler(tree, testID)
	tests := []struct {
		ptr  string
		want string // the value as JSON; "" when refused
	}{
		{"", "root"},
		{"/a/b~1c/d~0e", "1"},
		{"/l/0", "10"},
		{"/l/1", "20"},
		{"//x", "2"},
		{"/l/2", ""},
		{"/l/01", ""},
		{"/l/-0", ""},
		{"/l/x", ""},
		{"/a/b/c", ""},
		{"/a/b~1c/d~0e/f", ""},
		{"/n", ""},
		{"/n/k", ""},
		{"/missing", ""},
	}
	for _, tt := range tests {
		v, err := c.resolve(tt.ptr)
		switch {
		case tt.want == "":
			if !errors.Is(err, ErrUnsupported) {
				t.Errorf("resolve(%q) = %v, %v; want ErrUnsupported", tt.ptr, v, err)
			}
		case tt.want == "root":
			if err != nil {
				t.Errorf("resolve(\"\") = %v", err)
			}
		default:
			if b, _ := json.Marshal(v); err != nil || string(b) != tt.want {
				t.Errorf("resolve(%q) = %s, %v; want %s", tt.ptr, b, err, tt.want)
			}
		}
	}
}
