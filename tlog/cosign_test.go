package tlog

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// testWitness returns a cosignature/v1 signer and the verifier key a
// witness of that name publishes.
func testWitness(t testing.TB, name string) (note.Signer, string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	skey := fmt.Sprintf("PRIVATE+KEY+%s+%08x+%s", name, 0, base64.StdEncoding.EncodeToString(append([]byte{0x04}, priv.Seed()...)))
	s, err := fnote.NewSignerForCosignatureV1(skey)
	if err != nil {
		t.Fatal(err)
	}
	vkey, err := note.NewEd25519VerifierKey(name, pub)
	if err != nil {
		t.Fatal(err)
	}
	return s, vkey
}

func cosign(t testing.TB, msg []byte, s note.Signer) []byte {
	t.Helper()
	text, _, err := SplitNote(msg)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := note.Sign(&note.Note{Text: string(text)}, s)
	if err != nil {
		t.Fatal(err)
	}
	_, sigs, err := SplitNote(signed)
	if err != nil {
		t.Fatal(err)
	}
	return sigs
}

func TestCosigners(t *testing.T) {
	priv := testKey(t)
	c := testCheckpoint(priv)
	msg, err := Sign(c, priv)
	if err != nil {
		t.Fatal(err)
	}
	s1, k1 := testWitness(t, "witness.example/one")
	_, k2 := testWitness(t, "witness.example/two")
	var ws []note.Verifier
	for _, k := range []string{k1, k2} {
		v, err := NewWitnessVerifier(k)
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, v)
	}
	cosigned := append(msg, cosign(t, msg, s1)...)
	text, sigs, err := SplitNote(cosigned)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := ParseSigLines(sigs)
	if err != nil {
		t.Fatal(err)
	}
	if got := Cosigners(text, lines, ws); len(got) != 1 || got[0] != "witness.example/one" {
		t.Fatalf("Cosigners = %v, want the one witness that cosigned", got)
	}
	// The same cosignature on a rewritten checkpoint of the same size.
	rewritten := c
	rewritten.Root = refRoot(entryHashes(11)[1:])
	if got := Cosigners(rewritten.Text(), lines, ws); len(got) != 0 {
		t.Fatalf("a cosignature counted on a rewritten checkpoint: %v", got)
	}
	// The log's own signature is no cosignature, even by a key named like a witness.
	if got := Cosigners(text, lines[:1], ws); len(got) != 0 {
		t.Fatalf("the log's signature counted as a cosignature: %v", got)
	}
	if _, err := NewWitnessVerifier("not a key"); err == nil {
		t.Fatal("NewWitnessVerifier accepted garbage")
	}
	if _, err := ParseSigLines([]byte("— name !!!\n")); err == nil {
		t.Fatal("ParseSigLines accepted a line that is not base64")
	}
}

func TestNoteCheckerWitnessed(t *testing.T) {
	priv := testKey(t)
	pub := priv.Public().(ed25519.PublicKey)
	s, vkey := testWitness(t, "witness.example/one")
	v, err := NewWitnessVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	data := entryHashes(30)
	signedAt := func(size int, cosigned bool) []byte {
		c := Checkpoint{Origin: KeyOrigin(pub), Size: uint64(size), Root: refRoot(data[:size]), Head: hexOf(data[size-1])}
		msg, err := Sign(c, priv)
		if err != nil {
			t.Fatal(err)
		}
		if cosigned {
			msg = append(msg, cosign(t, msg, s)...)
		}
		return msg
	}
	// run feeds entries 1..upto with the notes at their sizes.
	run := func(upto int, notes map[int][]byte) error {
		c := NewNoteChecker([]ed25519.PublicKey{pub}, []note.Verifier{v}, 1)
		for i := 1; i <= upto; i++ {
			if err := c.Entry(hexOf(data[i-1])); err != nil {
				return err
			}
			if n, ok := notes[i]; ok {
				if err := c.Note(n); err != nil {
					return err
				}
			}
		}
		return c.Finish()
	}
	if err := run(30, map[int][]byte{10: signedAt(10, true), 30: signedAt(30, true)}); err != nil {
		t.Fatalf("every note cosigned, the last covering every entry: %v", err)
	}
	cases := map[string]struct {
		upto  int
		notes map[int][]byte
		size  uint64
		msg   string
	}{
		"ErrNotCosigned":   {30, map[int][]byte{10: signedAt(10, true), 20: signedAt(20, false), 30: signedAt(30, true)}, 20, "lacks a consistent cosignature"},
		"ErrTailUncovered": {30, map[int][]byte{10: signedAt(10, true)}, 30, "entries 11-30 are in no checkpoint"},
		"ErrNoNote":        {30, nil, 30, "no checkpoint note"},
		"ErrWrongRoot":     {30, map[int][]byte{10: signedAt(11, true)}, 11, "comes after entry 10"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := run(tc.upto, tc.notes)
			var ne *NoteError
			if !errors.As(err, &ne) || ne.Size != tc.size || !strings.Contains(ne.Reason, tc.msg) {
				t.Fatalf("err = %v, want checkpoint %d: %q", err, tc.size, tc.msg)
			}
		})
	}
}
