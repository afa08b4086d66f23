package web

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestAllowedValues(t *testing.T) {
	decode := func(s string) any {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	input := decode(`{"$ref":"#/$defs/order","$defs":{"order":{"properties":{
		"tier":{"$ref":"#/$defs/tier"},"text":{"type":"string"},"n":{"enum":[1,2,3]}}},
		"tier":{"enum":["info","warning","critical"]}}}`)
	policy := decode(`{"properties":{"tier":{"enum":["critical","warning","emergency"]}}}`)
	for _, tc := range []struct {
		name    string
		schemas []any
		field   string
		want    []any
	}{
		{"Ref", []any{input}, "tier", []any{"info", "warning", "critical"}},
		{"NarrowedByPolicy", []any{input, policy}, "tier", []any{"warning", "critical"}},
		{"Numbers", []any{input}, "n", []any{1.0, 2.0, 3.0}},
		{"FreeText", []any{input, policy}, "text", nil},
		{"Unknown", []any{input}, "nope", nil},
		{"NoSchema", nil, "tier", nil},
		{"LoopingRef", []any{decode(`{"$ref":"#"}`)}, "tier", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := allowedValues(tc.schemas, tc.field); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("allowed values %v, want %v", got, tc.want)
			}
		})
	}
}
