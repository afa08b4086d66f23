package ledger

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
)

// TestSealerMatchesSeal: a reused Sealer, given the entry prepared or not,
// seals every fixture exactly as Seal does.
func TestSealerMatchesSeal(t *testing.T) {
	var s, sp Sealer
	var z Canonicalizer
	var p Prepared
	prev := ""
	for i, body := range fixtureBodies() {
		e := custody.Entry{Seq: int64(i + 1), At: "2026-03-01T12:00:00Z", Kind: custody.KindCallSucceeded,
			Trace: "tr", Actor: "agent", Body: []byte(body)}
		if i%2 == 1 {
			e.Refs = map[string]string{"b": "2", "a": "1", "é": "ü"}
		}
		want := e
		if err := Seal(prev, &want); err != nil {
			t.Fatalf("Seal %d: %v", e.Seq, err)
		}
		plain := e
		if err := s.Seal(prev, &plain); err != nil {
			t.Fatalf("Sealer.Seal %d: %v", e.Seq, err)
		}
		prepared := e
		if err := z.Prepare(&p, &prepared); err != nil {
			t.Fatalf("Canonicalizer.Prepare %d: %v", e.Seq, err)
		}
		// A fresh Sealer decodes prev; the reused one knows it already.
		fresh := prepared
		if err := new(Sealer).SealPrepared(prev, &fresh, &p); err != nil {
			t.Fatalf("Sealer.SealPrepared (fresh) %d: %v", e.Seq, err)
		}
		if err := sp.SealPrepared(prev, &prepared, &p); err != nil {
			t.Fatalf("Sealer.SealPrepared %d: %v", e.Seq, err)
		}
		for _, got := range []custody.Entry{plain, prepared, fresh} {
			if got.Hash != want.Hash || got.BodySHA256 != want.BodySHA256 || got.Prev != want.Prev || got.Refs == nil {
				t.Fatalf("entry %d: sealed %+v, want %+v", e.Seq, got, want)
			}
		}
		prev = want.Hash
	}
}

// TestSealerRefuses: what Seal refuses, a Sealer refuses too.
func TestSealerRefuses(t *testing.T) {
	var s Sealer
	for _, e := range []custody.Entry{
		{Seq: 1, At: "now", Kind: "k", Body: []byte(`{"a":1,"a":2}`)},
		{Seq: 1, At: "now", Kind: "k", Actor: "\xff", Body: []byte(`{}`)},
	} {
		if err := Seal("", &e); err == nil {
			t.Fatalf("Seal accepted %q", e.Body)
		}
		if err := s.Seal("", &e); err == nil {
			t.Fatalf("Sealer.Seal accepted %q", e.Body)
		}
	}
	if err := s.Seal("not hex", &custody.Entry{Seq: 1, Kind: "k", Body: []byte(`{}`)}); err == nil {
		t.Fatal("Sealer.Seal accepted a prev that is not hex")
	}
	var z Canonicalizer
	var p Prepared
	for _, e := range []custody.Entry{
		{Seq: 1, At: "now", Kind: "k", Body: []byte(`{"a":1,"a":2}`)},
		{Seq: 1, At: "now", Kind: "k", Actor: "\xff", Body: []byte(`{}`)},
		{Seq: 1, At: "now", Kind: "k", Refs: map[string]string{"r": "\xff"}, Body: []byte(`{}`)},
		{Seq: 1, At: "now", Kind: "k", Trace: "\xff", Body: []byte(`{}`)},
	} {
		if err := z.Prepare(&p, &e); err == nil {
			t.Fatalf("Prepare accepted %+v", e)
		}
	}
	e := custody.Entry{Seq: 1, At: "now", Kind: "k", Body: []byte(`{}`)}
	if err := z.Prepare(&p, &e); err != nil {
		t.Fatal(err)
	}
	for _, prev := range []string{"not hex", strings.Repeat("A", 64), strings.Repeat("0", 63)} {
		if err := s.SealPrepared(prev, &e, &p); err == nil {
			t.Fatalf("Sealer.SealPrepared accepted prev %q", prev)
		}
	}
}

// TestCanonicalizerMatches: a reused Canonicalizer gives what
// Canonicalize gives, and the same refusals.
func TestCanonicalizerMatches(t *testing.T) {
	var z Canonicalizer
	docs := append(fixtureBodies(), `{"a":1,"a":2}`, `[1,`, "\"\xff\"", `9007199254740993`)
	for _, doc := range docs {
		want, werr := Canonicalize([]byte(doc))
		got, gerr := z.Append([]byte("x"), []byte(doc))
		cerr := z.Check([]byte(doc))
		if (werr == nil) != (gerr == nil) || (werr == nil) != (cerr == nil) {
			t.Fatalf("%q: Canonicalize error %v, Append %v, Check %v", doc, werr, gerr, cerr)
		}
		if werr != nil {
			var a, b *SyntaxError
			if !errors.As(werr, &a) || !errors.As(gerr, &b) || *a != *b || !bytes.Equal(got, []byte("x")) {
				t.Fatalf("%q: Append error %v (dst %q), want %v", doc, gerr, got, werr)
			}
			continue
		}
		if !bytes.Equal(got, append([]byte("x"), want...)) {
			t.Fatalf("%q: Append gave %q, want x%q", doc, got, want)
		}
	}
}
