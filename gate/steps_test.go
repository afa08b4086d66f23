package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/custody-dev/custody"
)

func TestDecodeStep(t *testing.T) {
	tests := []struct {
		name  string
		trace string
		args  string
		kind  string
		where string // text the message must hold
	}{
		{name: "OK", trace: "t-1", args: `{"a":[1,2.5,"x"]}`},
		{name: "OKNewTrace", args: `{}`},
		{name: "ErrDuplicateKey", trace: "t", args: `{"a":1,"b":{"c":1,"c":2}}`, kind: custody.EINVALID, where: "at byte"},
		{name: "ErrBigInteger", trace: "t", args: `{"a":-9007199254740993}`, kind: custody.EINVALID, where: "at byte"},
		{name: "ErrInvalidUTF8", trace: "t", args: "\"\xc3\x28\"", kind: custody.EINVALID, where: "at byte"},
		{name: "ErrTrailingData", trace: "t", args: `{} {}`, kind: custody.EINVALID, where: "at byte"},
		{name: "ErrTooBig", trace: "t", args: `{"a":"` + strings.Repeat("x", 64) + `"}`, kind: custody.EINVALID, where: "over the limit"},
		{name: "ErrEmpty", trace: "t", args: ``, kind: custody.EINVALID, where: "empty"},
		{name: "ErrTraceTooLong", trace: strings.Repeat("t", maxTraceBytes+1), args: `{}`, kind: custody.EINVALID, where: "trace id"},
		{name: "ErrTraceControl", trace: "a\x00b", args: `{}`, kind: custody.EINVALID, where: "trace id"},
	}
	g := &Gateway{maxArgs: 64}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &flight{Call: custody.Call{Trace: tt.trace, Args: json.RawMessage(tt.args)}}
			err := g.decode(context.Background(), f)
			if got := custody.ErrorKind(err); got != tt.kind {
				t.Fatalf("kind = %q (%v), want %q", got, err, tt.kind)
			}
			if f.Trace == "" || !validTrace(f.Trace) {
				t.Errorf("trace %q left unusable", f.Trace)
			}
			if err == nil {
				if !f.argsOK || (tt.trace != "" && f.Trace != tt.trace) {
					t.Errorf("flight = %+v", f)
				}
				return
			}
			ce := custody.AsError(err)
			if !strings.Contains(ce.Message, tt.where) || len(ce.Violations) != 1 || f.argsOK {
				t.Errorf("error = %+v, want a violation saying %q", ce, tt.where)
			}
		})
	}
}

func TestChoose(t *testing.T) {
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	a := func(id string, st custody.ApprovalStatus, digest string, age time.Duration) custody.Approval {
		return custody.Approval{ID: id, Status: st, Digest: digest, CreatedAt: now.Add(-age), ExpiresAt: now.Add(5*time.Minute - age)}
	}
	tests := []struct {
		name  string
		cands []custody.Approval
		use   string
		ask   bool
		kind  string
		names string
	}{
		{name: "OKNone", ask: true},
		{name: "OKApproved", cands: []custody.Approval{a("1", custody.ApprovalApproved, "d", time.Minute)}, use: "1"},
		{name: "OKApprovedOlderThanDeclined", cands: []custody.Approval{a("2", custody.ApprovalDeclined, "d", time.Minute), a("1", custody.ApprovalApproved, "d", 2*time.Minute)}, use: "1"},
		{name: "ErrPending", cands: []custody.Approval{a("1", custody.ApprovalPending, "d", time.Minute)}, kind: custody.EPENDING, names: "1"},
		{name: "ErrConsumed", cands: []custody.Approval{a("1", custody.ApprovalConsumed, "d", time.Minute)}, kind: custody.ECONFLICT, names: "1"},
		{name: "ErrDeclined", cands: []custody.Approval{a("1", custody.ApprovalDeclined, "d", time.Minute)}, kind: custody.EDENIED, names: "1"},
		{name: "ErrEdited", cands: []custody.Approval{a("1", custody.ApprovalApproved, "e", time.Minute)}, kind: custody.EDENIED, names: "1"},
		{name: "ErrExpiredAsksAgain", cands: []custody.Approval{a("1", custody.ApprovalApproved, "d", 6*time.Minute)}, kind: custody.EEXPIRED, ask: true},
		{name: "ErrPendingExpiredAsksAgain", cands: []custody.Approval{a("1", custody.ApprovalPending, "d", 5*time.Minute)}, kind: custody.EEXPIRED, ask: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			use, ask, err := choose(tt.cands, "d", now)
			if (use != nil && use.ID != tt.use) || (use == nil && tt.use != "") {
				t.Fatalf("use = %+v, want %q", use, tt.use)
			}
			if ask != tt.ask || custody.ErrorKind(err) != tt.kind {
				t.Fatalf("ask %v, err %v; want ask %v, kind %q", ask, err, tt.ask, tt.kind)
			}
			if tt.names != "" && custody.AsError(err).ApprovalRequestID != tt.names {
				t.Errorf("error names %q, want %q", custody.AsError(err).ApprovalRequestID, tt.names)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	doc := json.RawMessage(`{"a":{"b/c":[10,{"d":"x"}]},"e~f":true,"n":null}`)
	tests := []struct {
		name, ptr, want string
		ok              bool
	}{
		{"OKRoot", "", string(doc), true},
		{"OKEscaped", "/a/b~1c/1/d", `"x"`, true},
		{"OKTilde", "/e~0f", `true`, true},
		{"OKIndex", "/a/b~1c/0", `10`, true},
		{"ErrMissing", "/z", "", false},
		{"ErrIndexRange", "/a/b~1c/2", "", false},
		{"ErrLeadingZero", "/a/b~1c/01", "", false},
		{"ErrThroughScalar", "/e~0f/x", "", false},
		{"ErrNoSlash", "a", "", false},
	}
	spaced := json.RawMessage(" {\n \"a\" : 1 , \"b\\u0022\" :\t[ true , \"x]\\\"\" , { } ] ,\"c\":{\"d\":-2.5e3}\r} ")
	for _, tt := range []struct{ ptr, want string }{
		{"/a", `1`}, {"/b\"/0", `true`}, {"/b\"/1", `"x]\""`}, {"/b\"/2", `{ }`}, {"/c/d", `-2.5e3`}, {"/c", `{"d":-2.5e3}`},
	} {
		if got, ok := lookup(spaced, tt.ptr); !ok || string(got) != tt.want {
			t.Errorf("lookup(%q) in spaced = %q, %v; want %s", tt.ptr, got, ok, tt.want)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := lookup(doc, tt.ptr)
			if ok != tt.ok || (ok && string(got) != tt.want) {
				t.Fatalf("lookup(%q) = %s, %v; want %s, %v", tt.ptr, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestRefValue(t *testing.T) {
	tests := []struct {
		name, raw, want string
		ok              bool
	}{
		{"OKString", `"B-1"`, "B-1", true},
		{"OKNumber", `42`, "42", true},
		{"OKBool", `true`, "true", true},
		{"ErrNull", `null`, "", false},
		{"ErrObject", `{"a":1}`, "", false},
		{"ErrArray", `[1]`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := refValue(json.RawMessage(tt.raw))
			if got != tt.want || ok != tt.ok {
				t.Fatalf("refValue(%s) = %q, %v", tt.raw, got, ok)
			}
		})
	}
}

func TestWithoutMembers(t *testing.T) {
	raw := json.RawMessage(`{"message":"HI","approval_request_id":"x"}`)
	got, err := withoutMembers(raw, []string{"approval_request_id"})
	if err != nil || string(got) != `{"message":"HI"}` {
		t.Fatalf("withoutMembers = %s, %v", got, err)
	}
	same := json.RawMessage(`{"message":"HI"}`)
	if got, _ := withoutMembers(same, []string{"approval_request_id"}); &got[0] != &same[0] {
		t.Errorf("a document without the members was copied")
	}
	if _, err := withoutMembers(json.RawMessage(`[1]`), []string{"a"}); err == nil {
		t.Errorf("an array was accepted")
	}
}

// TestAppendJSONString: every string, even one that is not UTF-8, goes
// into a body as a JSON string that reads back as its valid UTF-8 form.
func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\s`, "tab\tnl\ncr\r", "ctl\x01\x1f", "é✓😀", "bad\xffutf8", "<&>"} {
		enc := appendJSON(nil, s)
		var back string
		if err := json.Unmarshal(enc, &back); err != nil {
			t.Fatalf("appendJSON(%q) = %s is not JSON: %v", s, enc, err)
		}
		if want := strings.ToValidUTF8(s, "\uFFFD"); back != want {
			t.Errorf("round trip of %q = %q", s, back)
		}
	}
}

func TestBodyStart(t *testing.T) {
	tests := []struct {
		name string
		f    flight
		want string
	}{
		{"OKArguments", flight{Call: custody.Call{Tool: "t", Args: json.RawMessage(`{ "a" : 1 }`)}, argsOK: true}, `{"tool":"t","arguments":{ "a" : 1 }}`},
		{"OKUnparsed", flight{Call: custody.Call{Tool: "t", Args: json.RawMessage(`{`)}}, `{"tool":"t","arguments":null,"arguments_sha256":"` +
			"021fb596db81e6d02bf3d2586ee3981fe519f275c0ac9ca76bbcf2ebb4097d96" + `","arguments_bytes":1,"arguments_base64":"ew=="}`},
		{"OKBadTrace", flight{Call: custody.Call{Tool: "t", Args: json.RawMessage(`{}`)}, argsOK: true, badTrace: "a\nb"}, `{"tool":"t","requested_trace":"a\nb","arguments":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(append(tt.f.bodyStart(nil), '}'))
			if got != tt.want {
				t.Fatalf("body = %s\nwant   %s", got, tt.want)
			}
			if !json.Valid([]byte(got)) {
				t.Fatalf("body is not JSON")
			}
		})
	}
}

// lookupByDecoding is what lookup answers, found by decoding with
// encoding/json: the reference the in-place reader is held to.
func lookupByDecoding(raw json.RawMessage, ptr string) (json.RawMessage, bool) {
	toks, err := splitPointer(ptr)
	if err != nil {
		return nil, false
	}
	for _, tok := range toks {
		v := bytes.TrimSpace(raw)
		var obj map[string]json.RawMessage
		var arr []json.RawMessage
		switch {
		case json.Unmarshal(v, &obj) == nil && obj != nil:
			next, ok := obj[tok]
			if !ok {
				return nil, false
			}
			raw = next
		case json.Unmarshal(v, &arr) == nil && arr != nil:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(arr) || strconv.Itoa(i) != tok {
				return nil, false
			}
			raw = arr[i]
		default:
			return nil, false
		}
	}
	return raw, true
}

// FuzzLookup: on strict JSON, lookup finds what decoding finds, and on
// anything it does not panic.
func FuzzLookup(f *testing.F) {
	f.Add([]byte(`{"a":{"b/c":[10,{"d":"x"}]},"e~f":true,"n":null}`), "/a/b~1c/1/d")
	f.Add([]byte(` { "k\u0065y" : [ 1 , "2\"]" , {"x":[]} ] } `), "/key/2/x")
	f.Add([]byte(`[[],{},"",0,-1.5e3,true,false,null]`), "/4")
	f.Add([]byte(`{"a":"\\","b":1}`), "/b")
	f.Add([]byte(`{"a":1 ,"b":[ 2 ,3 ]}`), "/b/0")
	f.Fuzz(func(t *testing.T, doc []byte, ptr string) {
		got, ok := lookup(doc, ptr)
		if !json.Valid(doc) || hasDuplicateNames(doc) {
			return
		}
		want, wok := lookupByDecoding(doc, ptr)
		if ok != wok || !bytes.Equal(got, want) {
			t.Fatalf("lookup(%q, %q) = %q, %v; decoding finds %q, %v", doc, ptr, got, ok, want, wok)
		}
		if ok {
			rv, rok := refValue(got)
			var v any
			json.Unmarshal(got, &v)
			if s, isStr := v.(string); isStr && (!rok || rv != s) {
				t.Fatalf("refValue(%q) = %q, %v; want %q", got, rv, rok, s)
			}
		}
	})
}

// hasDuplicateNames reports whether some object in the valid JSON doc
// names a member twice.
func hasDuplicateNames(doc []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(doc))
	type frame struct {
		obj   bool
		names map[string]bool
		key   bool // the next string token of an object is a name
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if s, ok := tok.(string); ok && top != nil && top.obj && top.key {
			if top.names[s] {
				return true
			}
			top.names[s], top.key = true, false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{obj: true, names: map[string]bool{}, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) > 0 {
				top = stack[len(stack)-1]
			} else {
				top = nil
			}
		}
		if top != nil && top.obj {
			top.key = true // a value ended: a name comes next
		}
	}
}

// TestSettleTrace: a call without a trace gets a distinct UUID v4, a
// usable trace is kept, and an unusable one is set aside for a new id.
func TestSettleTrace(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		f := &flight{}
		if err := settleTrace(f, uuid.NewString); err != nil {
			t.Fatal(err)
		}
		u, err := uuid.Parse(f.Trace)
		if err != nil || u.Version() != 4 || u.Variant() != uuid.RFC4122 || u.String() != f.Trace {
			t.Fatalf("trace %q is not a canonical UUID v4 (%v)", f.Trace, err)
		}
		if seen[f.Trace] {
			t.Fatalf("trace %q made twice", f.Trace)
		}
		seen[f.Trace] = true
	}
	f := &flight{}
	f.Trace = "mine"
	if err := settleTrace(f, uuid.NewString); err != nil || f.Trace != "mine" {
		t.Fatalf("usable trace: got %q, %v; want it kept", f.Trace, err)
	}
	f = &flight{}
	f.Trace = "bad\x00"
	if err := settleTrace(f, uuid.NewString); err == nil || f.badTrace != "bad\x00" || f.Trace == "bad\x00" {
		t.Fatalf("unusable trace: got trace %q, set aside %q, %v; want it set aside and refused", f.Trace, f.badTrace, err)
	}
}

// TestEntryRefs: refs handed to an entry never change afterwards, though
// the call goes on adding refs for its later entries.
func TestEntryRefs(t *testing.T) {
	f := &flight{}
	if f.entryRefs() != nil {
		t.Fatal("a call without refs gave its entry some")
	}
	f.ref("approval_request_id", "a1")
	intent := f.entryRefs()
	f.ref("note_id", "n1")
	f.ref("approval_request_id", "a2")
	if want := map[string]string{"approval_request_id": "a1"}; !maps.Equal(intent, want) {
		t.Errorf("intent's refs became %v, want %v", intent, want)
	}
	outcome := f.entryRefs()
	if want := map[string]string{"approval_request_id": "a2", "note_id": "n1"}; !maps.Equal(outcome, want) {
		t.Errorf("outcome's refs = %v, want %v", outcome, want)
	}
	// Adding a ref the entries already hold copies nothing.
	f.ref("note_id", "n1")
	if again := f.entryRefs(); reflect.ValueOf(again).Pointer() != reflect.ValueOf(outcome).Pointer() {
		t.Error("an unchanged ref copied the refs")
	}
}
