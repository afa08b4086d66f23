package ledger

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/strictjson"
)

func FuzzCanonicalize(f *testing.F) {
	for _, seed := range []string{
		`{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/","literals":[null,true,false]}`,
		`{"\u20ac":1,"\r":2,"\ufb33":3,"1":4,"\ud83d\ude00":5,"\u0080":6,"\u00f6":7}`,
		`{"a":1,"a":2}`, `9007199254740993`, `-0`, `1e400`, `1e-400`, `"\ud800"`, "\"\xff\"",
		`[[[[[]]]]]`, ` { "b" : [ true , false , null ] , "a" : { } } `, `0.1e1`, `-1.5E-7`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := Canonicalize(data)
		skipped := skipsTo(data)
		if err == nil && skipped != len(data) {
			t.Fatalf("skip stopped at %d of accepted %q", skipped, data)
		}
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Offset < 0 || se.Offset > len(data) {
				t.Fatalf("error %v is not a *SyntaxError within the input", err)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		again, err := Canonicalize(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("canonical form %q is not canonical: %q, %v", out, again, err)
		}
		var in, canon any
		if err := json.Unmarshal(data, &in); err != nil {
			t.Fatalf("encoding/json refused accepted input %q: %v", data, err)
		}
		if err := json.Unmarshal(out, &canon); err != nil {
			t.Fatalf("encoding/json refused canonical form %q: %v", out, err)
		}
		if !reflect.DeepEqual(in, canon) {
			t.Fatalf("canonical form changed the value:\n%q\n%q", data, out)
		}
	})
}

// skipsTo returns where skip ends on data, the space after the value
// included, or -1 if it fails.
func skipsTo(data []byte) int {
	d := strictjson.Reader{In: data}
	d.SkipSpace()
	if err := d.Skip(0); err != nil {
		return -1
	}
	d.SkipSpace()
	return d.Pos
}

func FuzzDecoder(f *testing.F) {
	export := fixtureExport(f)
	f.Add(export)
	for _, line := range bytes.SplitAfter(export, []byte("\n")) {
		f.Add(line)
	}
	f.Add([]byte("{}\n\n{\"checkpoint\":{}}\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := NewDecoder(bytes.NewReader(data))
		d.SetMaxLine(1 << 16)
		for i := 0; i <= len(data); i++ {
			l, err := d.Next()
			if err != nil {
				var le *LineError
				if err != io.EOF && !errors.As(err, &le) {
					t.Fatalf("error %v is neither io.EOF nor a *LineError", err)
				}
				return
			}
			if n := btoi(l.Entry != nil) + btoi(l.Checkpoint != nil) + btoi(l.Note != nil); n != 1 {
				t.Fatalf("line holds %+v", l)
			}
			reencoded(t, l)
		}
		t.Fatal("Next never ended")
	})
}

// reencoded checks that a decoded line encodes and decodes to itself.
func reencoded(t *testing.T, l Line) {
	var text []byte
	if l.Entry != nil {
		text = AppendEntryLine(nil, l.Entry)
	} else if l.Note != nil {
		text = AppendNoteLine(nil, l.Note)
	} else {
		text = AppendCheckpointLine(nil, *l.Checkpoint)
	}
	again, err := NewDecoder(bytes.NewReader(text)).Next()
	if err != nil {
		t.Fatalf("re-encoded line %q does not decode: %v", text, err)
	}
	if !reflect.DeepEqual(again, l) {
		t.Fatalf("re-encoded line changed:\n%+v\n%+v", again, l)
	}
}

// FuzzVerifier mutates a signed export. Signatures and hashes cannot be
// forged by a fuzzer, so whatever still verifies must mean what the
// original meant: each entry equal to the original with its seq, each
// checkpoint one of the originals.
func FuzzVerifier(f *testing.F) {
	export := fixtureExport(f)
	f.Add(export)
	f.Add(bytes.Replace(export, []byte(`"refs":{}`), []byte(`"refs" : { }`), 1))
	f.Add(bytes.Replace(export, []byte(`"é":`), []byte(`"\u00e9":`), 1))
	f.Add(bytes.Replace(export, []byte(`SLOW DOWN`), []byte(`SLOW  DOWN`), 1))
	lines := bytes.SplitAfter(export, []byte("\n"))
	f.Add(bytes.Join(lines[:5], nil))
	entries := fixtureEntries(f)
	originals := map[string]bool{}
	for _, line := range lines {
		if bytes.HasPrefix(line, []byte(`{"checkpoint"`)) {
			l, err := NewDecoder(bytes.NewReader(line)).Next()
			if err != nil {
				f.Fatal(err)
			}
			originals[l.Checkpoint.Sig+"|"+l.Checkpoint.At+"|"+l.Checkpoint.Head] = true
		}
	}
	pub := testKey().Public().(ed25519.PublicKey)
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := VerifyJSONL(bytes.NewReader(data), pub); err != nil {
			return
		}
		d := NewDecoder(bytes.NewReader(data))
		for {
			l, err := d.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				t.Fatalf("verified, but does not decode again: %v", err)
			}
			if cp := l.Checkpoint; cp != nil && !originals[cp.Sig+"|"+cp.At+"|"+cp.Head] {
				t.Fatalf("verified a checkpoint that was never signed: %+v", cp)
			}
			if e := l.Entry; e != nil && !sameEntry(e, entries) {
				t.Fatalf("verified an entry that was never written: %+v", e)
			}
		}
	})
}

func sameEntry(e *custody.Entry, entries []custody.Entry) bool {
	if e.Seq < 1 || e.Seq > int64(len(entries)) {
		return false
	}
	return reflect.DeepEqual(*e, entries[e.Seq-1])
}

// TestFuzzSeedsMeaningPreserved runs FuzzVerifier's meaning-preserving
// seeds through VerifyJSONL, so that the property the fuzzer relies on
// (some mutations do verify) is itself tested.
func TestFuzzSeedsMeaningPreserved(t *testing.T) {
	export := string(fixtureExport(t))
	for name, mutated := range map[string]string{
		"SpacesInLine": strings.Replace(export, `"refs":{}`, `"refs" : { }`, 1),
		"EscapedKey":   strings.Replace(export, `"é":`, `"\u00e9":`, 1),
		"MembersReordered": strings.Replace(export, `{"seq":1,"at":"2026-03-01T12:00:00.000000Z",`,
			`{"at":"2026-03-01T12:00:00.000000Z","seq":1,`, 1),
	} {
		t.Run(name, func(t *testing.T) {
			if mutated == export {
				t.Fatal("mutation did not apply")
			}
			if _, err := VerifyJSONL(strings.NewReader(mutated), testKey().Public().(ed25519.PublicKey)); err != nil {
				t.Errorf("VerifyJSONL: %v", err)
			}
		})
	}
}

// FuzzSealPrepared: an entry prepared and then sealed gets the hash Seal
// gives it, and what Seal refuses is refused by Prepare.
func FuzzSealPrepared(f *testing.F) {
	f.Add("agent", "tr", "k", "v", []byte(`{"a":[1,2.50,"\u20ac"]}`), int64(7))
	f.Add("\xff", "", "", "", []byte(`{}`), int64(1))
	f.Add("a", "t\"\\", "é", "\u2028", []byte(`{"a":1,"a":2}`), int64(1<<40))
	f.Fuzz(func(t *testing.T, actor, trace, key, val string, body []byte, seq int64) {
		e := custody.Entry{Seq: seq, At: "2026-03-01T12:00:00Z", Kind: "k", Trace: trace, Actor: actor, Body: body}
		if key != "" {
			e.Refs = map[string]string{key: val}
		}
		want := e
		werr := Seal("", &want)
		var z Canonicalizer
		var p Prepared
		got := e
		gerr := z.Prepare(&p, &got)
		if gerr == nil {
			gerr = new(Sealer).SealPrepared("", &got, &p)
		}
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("Seal error %v, prepared %v", werr, gerr)
		}
		if werr == nil && (got.Hash != want.Hash || got.Prev != want.Prev || got.BodySHA256 != want.BodySHA256) {
			t.Fatalf("prepared sealed %+v, want %+v", got, want)
		}
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
