package brain

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCheckSchemaNewText: a checked contract may add only bounded fields,
// and may not reopen what the shipped contract closes or bounds, however
// the schema reaches the text.
func TestCheckSchemaNewText(t *testing.T) {
	edit := func(fn func(defs map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(contractJSON, &m); err != nil {
			t.Fatal(err)
		}
		fn(m["$defs"].(map[string]any))
		return marshal(t, m)
	}
	addClaim := func(name string, schema any) []byte {
		return edit(func(defs map[string]any) { obj(defs["ClaimProjection"], "properties")[name] = schema })
	}
	str := func(kv ...any) map[string]any {
		m := map[string]any{"type": "string"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	closed := func(props map[string]any) map[string]any {
		return map[string]any{"type": "object", "additionalProperties": false, "properties": props}
	}
	const claim = "/$defs/ClaimProjection/properties/"
	tests := []struct {
		name string
		doc  []byte
		want []string
	}{
		{"OKShipped", contractJSON, nil},
		{"ErrBody", addClaim("body", str()),
			[]string{claim + "body: new property admits free text: a string without maxLength at most 120"}},
		{"OKNoteCapped80", addClaim("note", str("maxLength", 80)), nil},
		{"ErrNoteCapped500", addClaim("note", str("maxLength", 500)),
			[]string{claim + "note: new property admits free text: a string without maxLength at most 120"}},
		{"OKInteger", addClaim("rank", map[string]any{"type": "integer", "minimum": 0}), nil},
		{"OKBoolean", addClaim("stale", map[string]any{"type": "boolean"}), nil},
		{"OKEnum", addClaim("band", map[string]any{"type": "string", "enum": []any{"high", "low"}}), nil},
		{"OKNullableNumber", addClaim("weight", map[string]any{"type": []any{"number", "null"}}), nil},
		{"OKConst", addClaim("kind", map[string]any{"const": "claim"}), nil},
		{"OKRefToEnum", addClaim("from", map[string]any{"$ref": "#/$defs/Origin"}), nil},
		{"OKClosedObjectOfBoundedFields", addClaim("meta", closed(map[string]any{"n": map[string]any{"type": "integer"}})), nil},
		{"ErrObjectWithFreeString", addClaim("meta", closed(map[string]any{"n": map[string]any{"type": "integer"}, "text": str()})),
			[]string{claim + "meta: new property admits free text at " + claim + "meta/properties/text: a string without maxLength"}},
		{"ErrOpenObject", addClaim("meta", map[string]any{"type": "object"}),
			[]string{claim + "meta: new property admits free text: an object without additionalProperties: false"}},
		{"ErrArray", addClaim("ranks", map[string]any{"type": "array", "items": map[string]any{"type": "integer"}}),
			[]string{claim + "ranks: new property admits free text: an array"}},
		{"ErrNoType", addClaim("anything", map[string]any{}),
			[]string{claim + "anything: new property admits free text: no type"}},
		{"ErrTrue", addClaim("anything", true),
			[]string{claim + "anything: new property admits free text: the schema true"}},
		{"ErrRefDetour", addClaim("extra", map[string]any{"$ref": "#/$defs/FocusNode"}),
			[]string{claim + "extra: new property admits free text at /$defs/FocusNode/properties/id: a string without maxLength"}},
		{"ErrRefSiblingsIgnored", addClaim("extra", map[string]any{"$ref": "#/$defs/FocusNode", "type": "integer"}),
			[]string{claim + "extra: new property admits free text at /$defs/FocusNode/properties/id"}},
		{"ErrRemoteRef", addClaim("extra", map[string]any{"$ref": "https://example.com/text.json"}),
			[]string{claim + `extra: new property admits free text: $ref "https://example.com/text.json" cannot be resolved here`}},
		{"ErrAnchorRef", addClaim("extra", map[string]any{"$ref": "#note"}),
			[]string{claim + `extra: new property admits free text: $ref "#note" cannot be resolved here`}},
		{"ErrRecursiveRef", addClaim("extra", map[string]any{"$ref": "#/$defs/ClaimProjection/properties/extra"}),
			[]string{claim + `extra: new property admits free text: $ref "#/$defs/ClaimProjection/properties/extra" is recursive`}},
		{"OKAllOfOneBranchBounds", addClaim("n", map[string]any{"allOf": []any{map[string]any{}, map[string]any{"type": "integer"}}}), nil},
		{"ErrAllOfSplitCap", addClaim("note", map[string]any{"allOf": []any{str(), map[string]any{"maxLength": 50}}}),
			[]string{claim + "note: new property admits free text at " + claim + "note/allOf/0: a string without maxLength"}},
		{"ErrOneOfObjectWithText", addClaim("n", map[string]any{"oneOf": []any{map[string]any{"type": "integer"}, closed(map[string]any{"body": str()})}}),
			[]string{claim + "n: new property admits free text at " + claim + "n/oneOf/1/properties/body: a string without maxLength"}},
		{"ErrAnyOfWidensShipped", edit(func(defs map[string]any) {
			obj(defs["ClaimProjection"], "properties")["score"] = map[string]any{"anyOf": []any{map[string]any{"type": "number"}, str()}}
		}), []string{claim + "score: now admits free text at " + claim + "score/anyOf/1: a string without maxLength at most 120; the shipped contract bounds it"}},
		{"OKAnyOfStaysBounded", edit(func(defs map[string]any) {
			obj(defs["ClaimProjection"], "properties")["score"] = map[string]any{"anyOf": []any{map[string]any{"type": "number"}, map[string]any{"type": "integer"}}}
		}), nil},
		{"ErrTypeWidenedUnderCap", edit(func(defs map[string]any) {
			obj(defs["FocusNode"], "properties", "summary")["type"] = []any{"string", "object"}
		}), []string{"/$defs/FocusNode/properties/summary: now admits free text: an object without additionalProperties: false"}},
		{"ErrSharedEnumWidened", edit(func(defs map[string]any) { defs["Origin"] = str() }),
			[]string{"/$defs/Origin: now admits free text: a string without maxLength"}},
		{"ErrAdditionalPropertiesOpened", edit(func(defs map[string]any) { obj(defs["ClaimProjection"])["additionalProperties"] = true }),
			[]string{"/$defs/ClaimProjection: additionalProperties must be false, as shipped"}},
		{"ErrAdditionalPropertiesSchema", edit(func(defs map[string]any) {
			obj(defs["Constraints"])["additionalProperties"] = map[string]any{"type": "integer"}
		}), []string{"/$defs/Constraints: additionalProperties must be false, as shipped"}},
		{"ErrClosedObjectBecomesTrue", edit(func(defs map[string]any) { defs["RecentChangeProjection"] = true }),
			[]string{"/$defs/RecentChangeProjection: additionalProperties must be false, as shipped"}},
		{"ErrPatternProperties", edit(func(defs map[string]any) {
			obj(defs["ClaimProjection"])["patternProperties"] = map[string]any{"^b": map[string]any{"type": "integer"}}
		}), []string{"/$defs/ClaimProjection/patternProperties/^b: new pattern property"}},
		{"ErrEmbeddedResource", edit(func(defs map[string]any) { obj(defs["ClaimProjection"])["$id"] = "urn:claim" }),
			[]string{"/$defs/ClaimProjection: $id embeds a schema resource"}},
		{"ErrReplyTranscript", edit(func(defs map[string]any) {
			obj(defs["BrainResponse"], "properties", "suggestions", "items", "properties")["transcript"] = str()
		}), []string{"/$defs/BrainResponse/properties/suggestions/items/properties/transcript: new property admits free text"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			problems, err := CheckSchema(tt.doc)
			if err != nil {
				t.Fatal(err)
			}
			if len(problems) != len(tt.want) {
				t.Fatalf("problems = %q, want %d", problems, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(problems[i], w) {
					t.Errorf("problem %q, want prefix %q", problems[i], w)
				}
			}
		})
	}
}
