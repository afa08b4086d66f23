package fast

import (
	"testing"

	"github.com/custody-dev/custody/contract/internal/draft2020"
	"github.com/custody-dev/custody/internal/strictjson"
	"github.com/pb33f/jsonschema/v6"
)

// fuzzSchemas use every keyword the fast path compiles.
var fuzzSchemas = []string{
	`{"type": "object", "required": ["id", "n"], "additionalProperties": false,
	  "properties": {"id": {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,15}$"}, "n": {"type": "integer", "minimum": 0, "exclusiveMaximum": 100},
	    "tags": {"type": "array", "items": {"enum": ["a", "b", 1]}, "uniqueItems": true, "maxItems": 3},
	    "at": {"type": "string", "format": "date-time"}, "ref": {"format": "uri-reference"}, "u": {"format": "uuid"}}}`,
	`{"anyOf": [{"type": "string", "minLength": 2, "maxLength": 4}, {"type": "number", "multipleOf": 0.25}], "not": {"const": "none"}}`,
	`{"oneOf": [{"type": "integer"}, {"multipleOf": 0.5}, {"type": "null"}]}`,
	`{"prefixItems": [{"type": "boolean"}, {"type": "string", "format": "uri"}], "items": {"type": "object", "maxProperties": 1}, "minItems": 1}`,
	`{"$defs": {"node": {"type": "object", "properties": {"v": {"type": "number", "maximum": 1e3}, "next": {"$ref": "#/$defs/node"}},
	  "patternProperties": {"^x-": {"type": "string"}}, "additionalProperties": false}}, "$ref": "#/$defs/node"}`,
	`{"type": ["object", "array", "null"], "minProperties": 1, "patternProperties": {"^[0-9]+$": {"type": "integer"}}, "items": {"const": {"k": [1, 2.5]}}}`,
	`{"allOf": [{"minimum": -1.5}, {"maximum": 9007199254740993}, {"exclusiveMinimum": -2}], "enum": [0, -1.5, 2, "x", 9007199254740992]}`,
	`true`,
}

// compiledBoth is one fuzz schema, compiled both ways.
type compiledBoth struct {
	fast *Schema
	lib  *jsonschema.Schema
}

func compileBoth(tb testing.TB, schemaJSON string) compiledBoth {
	tb.Helper()
	const id = "https://example.test/fuzz.json"
	tree, err := strictjson.DecodeExact([]byte(schemaJSON))
	if err != nil {
		tb.Fatalf("schema %s: %v", schemaJSON, err)
	}
	c := draft2020.NewCompiler(nil, true)
	if err := c.AddResource(id, tree); err != nil {
		tb.Fatal(err)
	}
	lib, err := c.Compile(id)
	if err != nil {
		tb.Fatalf("library compile %s: %v", schemaJSON, err)
	}
	fast, err := NewCompiler(tree, id).Compile("")
	if err != nil {
		tb.Fatalf("fast compile %s: %v", schemaJSON, err)
	}
	return compiledBoth{fast, lib}
}

// FuzzAgreesWithLibrary is the fast path's differential test against the
// JSON Schema library: pass must be a document the library accepts,
// fail one it refuses, and Accepts must say pass alone.
func FuzzAgreesWithLibrary(f *testing.F) {
	schemas := make([]compiledBoth, len(fuzzSchemas))
	for i, s := range fuzzSchemas {
		schemas[i] = compileBoth(f, s)
	}
	for i, doc := range []string{
		`{"id": "a_1", "n": 5, "tags": ["a", 1], "at": "2026-01-02T03:04:05Z", "ref": "/x", "u": "6f1c2a9e-4b7d-4e8a-9c3f-2d5b8e7a1c40"}`,
		`"abc"`, `0.75`, `1.5`, `[true, "https://x.example/", {"a": 1}]`, `{"v": 1, "next": {"x-a": "s", "next": {}}}`,
		`{"12": 3}`, `[{"k": [1, 2.50]}]`, `-1.5`, `9007199254740992`, `{"a": 1, "a": 2}`, `[1e400]`, `"\ud800"`,
	} {
		f.Add(uint8(i), []byte(doc))
	}
	f.Fuzz(func(t *testing.T, which uint8, doc []byte) {
		s := schemas[int(which)%len(schemas)]
		v := verdictOn(s.fast, doc)
		valid := libraryAccepts(s.lib, doc)
		switch {
		case v == pass && !valid:
			t.Fatalf("schema %d: the fast path passes %q, which the library refuses", which, doc)
		case v == fail && valid:
			t.Fatalf("schema %d: the fast path fails %q, which the library accepts", which, doc)
		}
		if s.fast.Accepts(doc) != (v == pass) {
			t.Fatalf("schema %d: Accepts(%q) disagrees with the verdict %v", which, doc, v)
		}
	})
}
