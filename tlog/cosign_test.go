package tlog

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
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
