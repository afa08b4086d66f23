// Package independent checks custody's checkpoint notes the way a third
// party would: with golang.org/x/mod/sumdb/note and the standard library
// alone, importing nothing of custody. It reads an export that the sqlite
// package's TestIndependentFixture keeps current (go test ./sqlite -run
// IndependentFixture -update rewrites it).
package independent

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// line is what this check reads of an export line.
type line struct {
	Seq  int64   `json:"seq"`
	Hash string  `json:"hash"`
	Note *string `json:"note"`
}

func readExport(t *testing.T) (hashes [][]byte, notes []string, pub ed25519.PublicKey) {
	t.Helper()
	raw, err := os.ReadFile("testdata/ledger.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		var l line
		if err := json.Unmarshal(text, &l); err != nil {
			t.Fatal(err)
		}
		switch {
		case l.Note != nil:
			notes = append(notes, *l.Note)
		case l.Hash != "":
			h, err := hex.DecodeString(l.Hash)
			if err != nil || l.Seq != int64(len(hashes)+1) {
				t.Fatalf("entry %d: hash %q", l.Seq, l.Hash)
			}
			hashes = append(hashes, h)
		}
	}
	block, _ := pem.Decode(mustRead(t, "testdata/ledger.pub"))
	key, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return hashes, notes, key.(ed25519.PublicKey)
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// root is RFC 6962's Merkle tree hash over entry hashes as leaf data.
func root(leaves [][]byte) []byte {
	if len(leaves) == 1 {
		s := sha256.Sum256(append([]byte{0}, leaves[0]...))
		return s[:]
	}
	k := 1
	for k*2 < len(leaves) {
		k *= 2
	}
	s := sha256.Sum256(append(append([]byte{1}, root(leaves[:k])...), root(leaves[k:])...))
	return s[:]
}

func verifierFor(t *testing.T, origin string, pub ed25519.PublicKey) note.Verifier {
	t.Helper()
	vkey, err := note.NewEd25519VerifierKey(origin, pub)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestNotesVerifyWithSumdbNote(t *testing.T) {
	hashes, notes, pub := readExport(t)
	if len(notes) < 2 {
		t.Fatalf("%d notes in the export", len(notes))
	}
	for _, msg := range notes {
		origin, _, _ := strings.Cut(msg, "\n")
		n, err := note.Open([]byte(msg), note.VerifierList(verifierFor(t, origin, pub)))
		if err != nil {
			t.Fatalf("note.Open: %v\n%s", err, msg)
		}
		if len(n.Sigs) != 1 || n.Sigs[0].Name != origin {
			t.Fatalf("signatures %+v, want the log's under its origin %q", n.Sigs, origin)
		}
		// c2sp.org/tlog-checkpoint: origin, size, base64 root, extensions.
		lines := strings.Split(strings.TrimSuffix(n.Text, "\n"), "\n")
		if len(lines) != 4 || !strings.HasPrefix(lines[3], "head ") {
			t.Fatalf("checkpoint text %q", n.Text)
		}
		size, err := strconv.Atoi(lines[1])
		if err != nil || size < 1 || size > len(hashes) {
			t.Fatalf("size %q", lines[1])
		}
		got, err := base64.StdEncoding.DecodeString(lines[2])
		if err != nil || !bytes.Equal(got, root(hashes[:size])) {
			t.Fatalf("checkpoint %d: root %q is not RFC 6962's over the entries' hashes", size, lines[2])
		}
		if head := strings.TrimPrefix(lines[3], "head "); head != hex.EncodeToString(hashes[size-1]) {
			t.Fatalf("checkpoint %d: head %s is not entry %d's hash", size, head, size)
		}
	}
}

func TestTamperedNotesDoNotVerify(t *testing.T) {
	_, notes, pub := readExport(t)
	msg := notes[0]
	origin, _, _ := strings.Cut(msg, "\n")
	v := verifierFor(t, origin, pub)
	otherPub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		msg string
		v   note.Verifier
	}{
		"ErrTamperedRoot": {strings.Replace(msg, "\n16\n", "\n15\n", 1), v},
		"ErrOtherKey":     {msg, verifierFor(t, origin, otherPub)},
		"ErrOtherOrigin":  {msg, verifierFor(t, "example.com/other", pub)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.msg == msg && name == "ErrTamperedRoot" {
				t.Fatal("the first note is not of size 16: the case tampers nothing")
			}
			if _, err := note.Open([]byte(tc.msg), note.VerifierList(tc.v)); err == nil {
				t.Fatal("note.Open accepted it")
			}
		})
	}
}
