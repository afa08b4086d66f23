package gate

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
)

// succeededBody builds a call.succeeded body as succeed does.
func succeededBody(f *flight, out json.RawMessage) []byte {
	body := f.bodyStart(nil)
	body = append(body, `,"output":`...)
	body = append(body, out...)
	body = appendElapsed(body, f.elapsed)
	return append(body, '}')
}

// sameDocument reports whether a and b decode to the same JSON value.
func sameDocument(t *testing.T, a, b []byte) bool {
	t.Helper()
	decode := func(raw []byte) any {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatalf("%s is not JSON: %v", raw, err)
		}
		return v
	}
	return reflect.DeepEqual(decode(a), decode(b))
}

// checkBody holds the hand-built body to json.Marshal of the same
// document, and to the exact argument and output bytes it must embed.
func checkBody(t *testing.T, tool, args, out string) {
	t.Helper()
	f := &flight{Call: custody.Call{Tool: tool, Args: json.RawMessage(args)}, argsOK: true, elapsed: 1234567 * time.Nanosecond}
	got := succeededBody(f, json.RawMessage(out))
	want, err := json.Marshal(markedBody{tool, f.Args, json.RawMessage(out), 1234})
	if err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	if !sameDocument(t, got, want) {
		t.Fatalf("body %s\ndiffers from json.Marshal %s", got, want)
	}
	if !bytes.Contains(got, []byte(`"arguments":`+args+`,`)) || !bytes.Contains(got, []byte(`"output":`+out+`,`)) {
		t.Fatalf("body %s does not hold the exact arguments %s and output %s", got, args, out)
	}
}

// TestBodyAgreesWithMarshal: the hand-built body is the document
// json.Marshal would write, with the caller's bytes kept as they came.
func TestBodyAgreesWithMarshal(t *testing.T) {
	for _, c := range []struct{ tool, args, out string }{
		{"echo", `{}`, `{"ok":true}`},
		{"notes_write", `{ "title" : "a <b> & c", "n": 1.50 }`, "[1,\n2]"},
		{"q\"uote\\d\ttool\x01", `{"s":"\u00e9\ud83d\ude00"}`, `"é😀"`},
		{"bad\xffutf8 <tool>", `[]`, `null`},
	} {
		checkBody(t, c.tool, c.args, c.out)
	}
}

func FuzzBody(f *testing.F) {
	f.Add("echo", `{"a":1}`, `{"b":"<c>"}`)
	f.Add("t\x00\xff", `{ "a" : [ 1 , 2 ] }`, `"x\u2028y"`)
	f.Fuzz(func(t *testing.T, tool, args, out string) {
		if ledger.Check([]byte(args)) != nil || ledger.Check([]byte(out)) != nil {
			t.Skip("the gateway embeds only strict JSON")
		}
		checkBody(t, tool, args, out)
	})
}
