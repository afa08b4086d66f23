package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// draft2020 is the dialect of the schemas custody writes itself.
const draft2020 = "https://json-schema.org/draft/2020-12/schema"

// CloseObjects returns schema with every object schema that declares
// properties, and says nothing of other members, closed to them
// ("additionalProperties": false): an argument the tool never declared
// is refused, never stripped or passed on. It descends through
// properties, patternProperties, additionalProperties, items,
// prefixItems, $defs and definitions, but not into allOf, anyOf, oneOf,
// not, if/then/else or dependent schemas, where closing one branch would
// refuse members another branch declares; nor does it close a schema
// that combines its properties with a $ref or a branch of its own.
// Numbers keep their literals.
func CloseObjects(schema json.RawMessage) (json.RawMessage, error) {
	tree, err := decodeTree(schema)
	if err != nil {
		return nil, err
	}
	closeObjects(tree)
	return encodeTree(tree)
}

// decodeTree decodes JSON keeping number literals.
func decodeTree(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("schema is not JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("schema has data after its JSON value")
	}
	return v, nil
}

// encodeTree encodes a decoded tree without escaping HTML characters.
func encodeTree(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// openers are the members beside which closing a schema's properties
// could refuse members declared elsewhere (a $ref's target, a branch of
// allOf), or that already say what other members may be.
var openers = []string{"additionalProperties", "unevaluatedProperties", "allOf", "anyOf", "oneOf",
	"$ref", "$dynamicRef", "if", "dependentSchemas", "dependencies"}

func hasAny(s map[string]any, keys []string) bool {
	for _, k := range keys {
		if _, ok := s[k]; ok {
			return true
		}
	}
	return false
}

// closeObjects closes one schema and the schemas below it that CloseObjects
// names.
func closeObjects(v any) {
	s, ok := v.(map[string]any)
	if !ok {
		return
	}
	if _, has := s["properties"]; has && !hasAny(s, openers) {
		s["additionalProperties"] = false
	}
	for _, k := range []string{"properties", "patternProperties", "$defs", "definitions"} {
		if m, ok := s[k].(map[string]any); ok {
			for _, sub := range m {
				closeObjects(sub)
			}
		}
	}
	for _, k := range []string{"additionalProperties", "items", "additionalItems"} {
		switch sub := s[k].(type) {
		case map[string]any:
			closeObjects(sub)
		case []any: // draft-07 tuple items
			for _, item := range sub {
				closeObjects(item)
			}
		}
	}
	if list, ok := s["prefixItems"].([]any); ok {
		for _, item := range list {
			closeObjects(item)
		}
	}
}

// resultSchema is the output contract of an upstream MCP tool: an MCP
// CallToolResult whose content is a list and, when the tool declares an
// output schema (outputRef, "" when none), whose structuredContent
// matches it unless the result reports an error.
func resultSchema(outputRef string) json.RawMessage {
	s := map[string]any{
		"$schema":  draft2020,
		"type":     "object",
		"required": []any{"content"},
		"properties": map[string]any{
			"content": map[string]any{"type": "array", "items": map[string]any{
				"type": "object", "required": []any{"type"}, "properties": map[string]any{"type": map[string]any{"type": "string"}},
			}},
			"isError": map[string]any{"type": "boolean"},
			"_meta":   map[string]any{"type": "object"},
		},
	}
	if outputRef != "" {
		props := s["properties"].(map[string]any)
		props["structuredContent"] = map[string]any{"$ref": outputRef}
		s["if"] = map[string]any{"required": []any{"isError"}, "properties": map[string]any{"isError": map[string]any{"const": true}}}
		s["else"] = map[string]any{"required": []any{"structuredContent"}}
	}
	raw, _ := encodeTree(s)
	return raw
}

// resultPolicySchema wraps a policy's output schema so that it applies to
// the structuredContent of a result that is not an error.
func resultPolicySchema(policy json.RawMessage) json.RawMessage {
	s := map[string]any{
		"$schema": draft2020,
		"if":      map[string]any{"required": []any{"isError"}, "properties": map[string]any{"isError": map[string]any{"const": true}}},
		"else": map[string]any{
			"required":   []any{"structuredContent"},
			"properties": map[string]any{"structuredContent": json.RawMessage(policy)},
		},
	}
	raw, _ := encodeTree(s)
	return raw
}

// withDialect returns schema declaring 2020-12 when it declares no
// dialect of its own.
func withDialect(schema json.RawMessage) (json.RawMessage, error) {
	tree, err := decodeTree(schema)
	if err != nil {
		return nil, err
	}
	obj, ok := tree.(map[string]any)
	if !ok {
		return schema, nil
	}
	if _, has := obj["$schema"]; !has {
		obj["$schema"] = draft2020
	}
	return encodeTree(obj)
}
