package strictjson_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/custody-dev/custody/contract/fast"
	"github.com/custody-dev/custody/internal/strictjson"
	"github.com/custody-dev/custody/ledger"
)

// FuzzStrict holds every reader built on the package to one decision per
// document, so that no two doors can disagree about what a document says:
//
//   - Decode, the value tree of the contract registry;
//   - ledger.Check and ledger.Canonicalize, which the gateway and every
//     front door apply, and which the ledger records by;
//   - the contract's fast path, which may leave a document to Decode but
//     never accept one Decode refuses;
//   - Skip, which finds where a value ends for the ledger's export
//     reader, and DecodeExact, the contract files' reader: they accept
//     whatever Decode accepts, and refuse nothing for a rule other than
//     theirs.
//
// encoding/json is the loose oracle: whatever Decode accepts it accepts as
// the same tree; whatever it accepts in valid UTF-8 and Decode refuses
// breaks one of the stricter rules.
func FuzzStrict(f *testing.F) {
	for _, seed := range []string{
		`{"a": [1, -2.5e3, true, false, null], "b": {"c": "d\u00e9"}}`,
		`{"a": 1, "a": 2}`, `{"a":1,"\u0061":2}`, `{"x": [{"b": 1, "\u0062": 2}]}`,
		`"\ud83d\ude00"`, `"\ud800"`, `"\ude00x"`, "\"\xff\"", "\"\xed\xa0\x80\"", `[1,]`, `-0.0e-0`, `-0`,
		`123456789012345678901234567890`, `9007199254740993`, `9007199254740992`, `1e20`, `1e21`, `1E30`,
		`1e400`, `1e-400`, `1e-10000`, `0E00009999`, `9007199254740994.0`, `0.1e1`, `-1.5E-7`,
		`{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001]}`,
		` { "b" : [ true , false , null ] , "a" : { } } `, `{} {}`, `[[[[[]]]]]`, "\xef\xbb\xbf{}",
		strings.Repeat("[", strictjson.MaxDepth) + strings.Repeat("]", strictjson.MaxDepth),
		strings.Repeat("[", strictjson.MaxDepth+1) + strings.Repeat("]", strictjson.MaxDepth+1),
	} {
		f.Add([]byte(seed))
	}
	anything := fastAnything(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		tree, err := strictjson.Decode(raw)
		checkSyntaxError(t, "Decode", raw, err)
		accepted := err == nil

		lerr := ledger.Check(raw)
		if accepted != (lerr == nil) {
			t.Fatalf("%q: Decode error %v, ledger.Check error %v", raw, err, lerr)
		}
		var lse *ledger.SyntaxError
		if lerr != nil && (!errors.As(lerr, &lse) || lse.Offset < 0 || lse.Offset > len(raw)) {
			t.Fatalf("%q: ledger.Check error %v is not a *ledger.SyntaxError within the input", raw, lerr)
		}
		if anything.Accepts(raw) && !accepted {
			t.Fatalf("%q: the contract's fast path accepts what Decode refuses: %v", raw, err)
		}
		checkLenient(t, raw, err)
		if accepted {
			checkAccepted(t, raw, tree)
			return
		}
		if json.Valid(raw) && utf8.Valid(raw) && !stricterRule(err) {
			t.Fatalf("%q: Decode refused valid JSON: %v", raw, err)
		}
	})
}

// fastAnything compiles a schema that every strict document satisfies
// for the contract's fast path.
func fastAnything(tb testing.TB) *fast.Schema {
	tree, err := strictjson.DecodeExact([]byte(`{"properties": {"a": {}}}`))
	if err != nil {
		tb.Fatal(err)
	}
	s, err := fast.NewCompiler(tree, "urn:custody:test:anything").Compile("")
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// checkSyntaxError fails t unless err is nil or a *strictjson.SyntaxError
// within raw.
func checkSyntaxError(t *testing.T, who string, raw []byte, err error) {
	t.Helper()
	var se *strictjson.SyntaxError
	if err != nil && (!errors.As(err, &se) || se.Offset < 0 || se.Offset > len(raw)) {
		t.Fatalf("%q: %s error %v is not a *strictjson.SyntaxError within the input", raw, who, err)
	}
}

// checkLenient holds DecodeExact and Skip, which apply fewer rules, to
// Decode, whose error on raw is err.
func checkLenient(t *testing.T, raw []byte, err error) {
	t.Helper()
	_, xerr := strictjson.DecodeExact(raw)
	checkSyntaxError(t, "DecodeExact", raw, xerr)
	if err == nil && xerr != nil {
		t.Fatalf("%q: DecodeExact refuses what Decode accepts: %v", raw, xerr)
	}
	if err != nil && xerr == nil && !numberRule(err) {
		t.Fatalf("%q: DecodeExact accepts what Decode refuses for a rule other than a number's: %v", raw, err)
	}
	d := strictjson.Reader{In: raw}
	d.SkipSpace()
	serr := d.Skip(0)
	checkSyntaxError(t, "Skip", raw, serr)
	if serr == nil {
		serr = d.End()
	}
	if err == nil && serr != nil {
		t.Fatalf("%q: Skip refuses what Decode accepts: %v", raw, serr)
	}
	if err != nil && serr == nil && !numberRule(err) && !strings.Contains(err.Error(), "duplicate key") {
		t.Fatalf("%q: Skip accepts what Decode refuses for a rule Skip holds: %v", raw, err)
	}
}

// checkAccepted checks a document every reader accepted: encoding/json
// reads the same tree, and the ledger's canonical form of it is a strict
// document that means the same and is its own canonical form.
func checkAccepted(t *testing.T, raw []byte, tree any) {
	t.Helper()
	if !json.Valid(raw) || !utf8.Valid(raw) {
		t.Fatalf("%q: accepted, but encoding/json or UTF-8 refuses it", raw)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var want any
	if err := dec.Decode(&want); err != nil {
		t.Fatalf("%q: encoding/json: %v", raw, err)
	}
	if !reflect.DeepEqual(tree, want) {
		t.Fatalf("%q: Decode reads %#v, encoding/json %#v", raw, tree, want)
	}
	canon, err := ledger.Canonicalize(raw)
	if err != nil {
		t.Fatalf("%q: Canonicalize: %v", raw, err)
	}
	if _, err := strictjson.Decode(canon); err != nil {
		t.Fatalf("%q: canonical form %q is refused: %v", raw, canon, err)
	}
	if again, err := ledger.Canonicalize(canon); err != nil || !bytes.Equal(again, canon) {
		t.Fatalf("%q: canonical form %q is not canonical: %q, %v", raw, canon, again, err)
	}
}

// stricterRule reports whether err is a rule that encoding/json does not
// hold.
func stricterRule(err error) bool {
	msg := err.Error()
	return numberRule(err) || strings.Contains(msg, "duplicate key") ||
		strings.Contains(msg, "unpaired surrogate") || strings.Contains(msg, "nesting deeper")
}

// numberRule reports whether err is a refusal by the number rules.
func numberRule(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "beyond ±2^53") || strings.Contains(msg, "beyond the range of a double") ||
		strings.Contains(msg, "exponent out of range")
}
