package peas

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestIntegralNumbers(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"b":1800.0,"a":[3e2,1.5,-2.0,0.0,1e400],"s":"1.0 \"q\"","n":null,"t":true}`,
			`{"b":1800,"a":[300,1.5,-2,0,1e400],"s":"1.0 \"q\"","n":null,"t":true}`},
		{`[]`, `[]`},
		{`{"o":{},"x":[{"y":2E1}]}`, `{"o":{},"x":[{"y":20}]}`},
		{`12`, `12`},
		{`9007199254740993.0`, `9007199254740993.0`},
	}
	for _, tt := range tests {
		got, err := integralNumbers([]byte(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("integralNumbers(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	if _, err := integralNumbers([]byte(`{"a":`)); err == nil {
		t.Error("truncated document accepted")
	}
}

// FuzzIntegralNumbers: for any JSON document, the rewrite is JSON of the
// same value.
func FuzzIntegralNumbers(f *testing.F) {
	for _, seed := range []string{`{"a":1800.0,"b":[3e2,"x",null,true,{}]}`, `[1.5,-0.0,2E+3]`, `"s"`, `{"k":{"n":[[]]}}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var want any
		if json.Unmarshal([]byte(doc), &want) != nil {
			return
		}
		out, err := integralNumbers([]byte(doc))
		if err != nil {
			t.Fatalf("integralNumbers(%s): %v", doc, err)
		}
		var got any
		if err := json.Unmarshal(out, &got); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("integralNumbers(%s) = %s (%v), a different value", doc, out, err)
		}
	})
}
