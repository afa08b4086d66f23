package upstream

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/custody-dev/custody/contract"
)

func TestCloseObjectsDescends(t *testing.T) {
	for _, tt := range []struct {
		name, in, want string
	}{
		{"PatternProperties", `{"patternProperties":{"^x":{"properties":{"a":{}}}}}`,
			`{"patternProperties":{"^x":{"additionalProperties":false,"properties":{"a":{}}}}}`},
		{"AdditionalPropertiesSchema", `{"properties":{"a":{}},"additionalProperties":{"properties":{"b":{}}}}`,
			`{"additionalProperties":{"additionalProperties":false,"properties":{"b":{}}},"properties":{"a":{}}}`},
		{"PrefixItems", `{"prefixItems":[{"properties":{"a":{}}},{"type":"string"}]}`,
			`{"prefixItems":[{"additionalProperties":false,"properties":{"a":{}}},{"type":"string"}]}`},
		{"TupleItems", `{"items":[{"properties":{"a":{}}}],"additionalItems":{"properties":{"b":{}}}}`,
			`{"additionalItems":{"additionalProperties":false,"properties":{"b":{}}},"items":[{"additionalProperties":false,"properties":{"a":{}}}]}`},
		{"NotIntoBranches", `{"anyOf":[{"properties":{"a":{}}}],"not":{"properties":{"b":{}}},"if":{"properties":{"c":{}}},"then":{"properties":{"d":{}}}}`,
			`{"anyOf":[{"properties":{"a":{}}}],"if":{"properties":{"c":{}}},"not":{"properties":{"b":{}}},"then":{"properties":{"d":{}}}}`},
		{"UnevaluatedPropertiesDecides", `{"properties":{"a":{}},"unevaluatedProperties":false}`,
			`{"properties":{"a":{}},"unevaluatedProperties":false}`},
		{"DynamicRefLeftOpen", `{"properties":{"a":{}},"$dynamicRef":"#meta"}`,
			`{"$dynamicRef":"#meta","properties":{"a":{}}}`},
		{"DependentSchemasLeftOpen", `{"properties":{"a":{}},"dependentSchemas":{"a":{"properties":{"b":{}}}}}`,
			`{"dependentSchemas":{"a":{"properties":{"b":{}}}},"properties":{"a":{}}}`},
		{"HTMLNotEscaped", `{"properties":{"a":{"pattern":"<b>&"}}}`,
			`{"additionalProperties":false,"properties":{"a":{"pattern":"<b>&"}}}`},
		{"BooleanSchema", `true`, `true`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CloseObjects(json.RawMessage(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
	for _, bad := range []string{``, `{"a":`, `{} {}`} {
		if _, err := CloseObjects(json.RawMessage(bad)); err == nil {
			t.Errorf("%q was taken as a schema", bad)
		}
	}
}

func TestWithoutID(t *testing.T) {
	got, err := withoutID(json.RawMessage(`{"$id":"https://x.example/s","type":"object","$defs":{"d":{"$id":"inner"}}}`))
	if err != nil || string(got) != `{"$defs":{"d":{"$id":"inner"}},"type":"object"}` {
		t.Errorf("got %s %v", got, err)
	}
	same := json.RawMessage(`{ "type" : "object" }`)
	if got, err := withoutID(same); err != nil || string(got) != string(same) {
		t.Errorf("a schema without $id was rewritten: %s %v", got, err)
	}
	for _, bad := range []string{`true`, `[1]`, `{`} {
		if _, err := withoutID(json.RawMessage(bad)); err == nil {
			t.Errorf("%s was taken as a schema object", bad)
		}
	}
}

func TestWithDialect(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{"type":"object"}`, `{"$schema":"` + draft2020 + `","type":"object"}`},
		{`{"$schema":"http://json-schema.org/draft-07/schema#"}`, `{"$schema":"http://json-schema.org/draft-07/schema#"}`},
		{`true`, `true`},
	} {
		if got, err := withDialect(json.RawMessage(tt.in)); err != nil || string(got) != tt.want {
			t.Errorf("withDialect(%s) = %s %v, want %s", tt.in, got, err, tt.want)
		}
	}
	if _, err := withDialect(json.RawMessage(`{`)); err == nil {
		t.Error("a schema that is not JSON was taken")
	}
}

func TestResultSchemas(t *testing.T) {
	// The result contracts are checked by compiling them beside an
	// output schema and validating results as the gateway would.
	output := []byte(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)
	policy := resultPolicySchema(json.RawMessage(`{"properties":{"n":{"maximum":10}}}`))
	reg, err := contract.Load(contract.Options{Extra: map[string][]byte{
		file("t", "output"): output,
		file("t", "result"): resultSchema(contractURI("t", "output")),
		file("u", "result"): resultSchema(""),
		file("t", "policy"): policy,
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, schema, doc string
		ok                bool
	}{
		{"OK", "t/result", `{"content":[{"type":"text","text":"1"}],"structuredContent":{"n":1}}`, true},
		{"ErrNoStructuredContent", "t/result", `{"content":[]}`, false},
		{"ErrStructuredContentBreaksOutput", "t/result", `{"content":[],"structuredContent":{"n":"one"}}`, false},
		{"ToolErrorWithoutStructuredContent", "t/result", `{"content":[{"type":"text","text":"no"}],"isError":true}`, true},
		{"ErrNoContent", "u/result", `{}`, false},
		{"ErrContentWithoutType", "u/result", `{"content":[{"text":"x"}]}`, false},
		{"NoOutputSchema", "u/result", `{"content":[],"_meta":{"k":1}}`, true},
		{"PolicyHolds", "t/policy", `{"content":[],"structuredContent":{"n":10}}`, true},
		{"ErrPolicy", "t/policy", `{"content":[],"structuredContent":{"n":11}}`, false},
		{"PolicySkipsToolErrors", "t/policy", `{"content":[],"isError":true}`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tool, part, _ := strings.Cut(tt.schema, "/")
			err := reg.Validate(ref(tool, part), json.RawMessage(tt.doc))
			if (err == nil) != tt.ok {
				t.Errorf("%s against %s: %v, want ok %v", tt.doc, tt.schema, err, tt.ok)
			}
		})
	}
}
