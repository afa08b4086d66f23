package httpjson

import (
	"errors"
	"strings"
	"testing"

	"github.com/custody-dev/custody/ledger"
)

func TestCheckEnvelope(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		path       []string
		ok         bool
	}{
		{"Strict", `{"tool":"a","arguments":{"x":1}}`, []string{"arguments"}, true},
		{"DuplicateInArguments", `{"tool":"a","arguments":{"x":1,"x":2}}`, []string{"arguments"}, true},
		{"BadUTF8InArguments", "{\"tool\":\"a\",\"arguments\":{\"x\":\"\xff\"}}", []string{"arguments"}, true},
		{"NestedArguments", `{"jsonrpc":"2.0","id":1,"params":{"name":"a","arguments":{"x":1,"x":2}}}`, []string{"params", "arguments"}, true},
		{"DuplicateTool", `{"tool":"a","tool":"b","arguments":{"x":1,"x":2}}`, []string{"arguments"}, false},
		{"DuplicateArguments", `{"tool":"a","arguments":{"x":1,"x":2},"arguments":{}}`, []string{"arguments"}, false},
		{"DuplicateParams", `{"params":{"arguments":{"x":1,"x":2}},"params":{}}`, []string{"params", "arguments"}, false},
		{"BadUTF8InTool", "{\"tool\":\"a\xff\",\"arguments\":{\"x\":1,\"x\":2}}", []string{"arguments"}, false},
		{"Trailing", `{"tool":"a","arguments":{"x":1,"x":2}} x`, []string{"arguments"}, false},
		{"Batch", `[{"params":{"arguments":{"x":1,"x":2}}}]`, []string{"params", "arguments"}, false},
		{"NotJSONArguments", `{"tool":"a","arguments":{"x":}}`, []string{"arguments"}, false},
		{"ElsewhereOnly", `{"tool":"a","other":{"x":1,"x":2}}`, []string{"arguments"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckEnvelope([]byte(tt.body), ledger.Check, tt.path...)
			if (err == nil) != tt.ok {
				t.Fatalf("CheckEnvelope(%q) = %v, want ok %v", tt.body, err, tt.ok)
			}
			var se *ledger.SyntaxError
			if err != nil && !errors.As(err, &se) && !strings.Contains(err.Error(), "byte") {
				t.Errorf("the error is not the checker's own: %v", err)
			}
		})
	}
}
