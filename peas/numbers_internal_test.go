package peas

import "testing"

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
