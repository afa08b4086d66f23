package tlog

import (
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

func TestVerifyWitnessed(t *testing.T) {
	priv := testKey(t)
	pub := priv.Public().(ed25519.PublicKey)
	hash := strings.Repeat("ab", HashSize)
	leaf, err := EntryLeafHash(hash)
	if err != nil {
		t.Fatal(err)
	}
	tree := NewTree()
	if err := tree.Append(leaf, nil); err != nil {
		t.Fatal(err)
	}
	c := Checkpoint{Origin: "example.com/log", Size: 1, Root: tree.Root(), Head: hash}
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
	receipt := func(note []byte) Receipt { return Receipt{Seq: 1, Hash: hash, Size: 1, Checkpoint: string(note)} }
	cosigned := append(append([]byte(nil), msg...), cosign(t, msg, s1)...)
	if _, err := receipt(cosigned).VerifyWitnessed(pub, "", ws[:1]); err != nil {
		t.Fatal(err)
	}
	// The witness's cosignature of another checkpoint, under its name
	// and key hash, on this one.
	other, err := Sign(Checkpoint{Origin: c.Origin, Size: 1, Root: make([]byte, HashSize), Head: hash}, priv)
	if err != nil {
		t.Fatal(err)
	}
	forged := append(append([]byte(nil), msg...), cosign(t, other, s1)...)
	cases := map[string]struct {
		note   []byte
		ws     []note.Verifier
		forged bool
	}{
		"ErrMissing":      {msg, ws[:1], false},
		"ErrOtherWitness": {cosigned, ws, false},
		"ErrForged":       {forged, ws[:1], true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := receipt(tc.note).VerifyWitnessed(pub, "", tc.ws)
			var ce *CosignatureError
			if !errors.As(err, &ce) || ce.Forged != tc.forged {
				t.Fatalf("err = %v, want a CosignatureError with Forged %v", err, tc.forged)
			}
		})
	}
}
