package tlog

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func hexOf(b []byte) string { return hex.EncodeToString(b) }

func testKey(t testing.TB) ed25519.PrivateKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return priv
}

// KeyOrigin returns an origin derived from a public key: "custody/ledger/"
// and the first 16 hex digits of SHA-256 of the key.
func KeyOrigin(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return "custody/ledger/" + hex.EncodeToString(sum[:8])
}

func testCheckpoint(priv ed25519.PrivateKey) Checkpoint {
	data := entryHashes(10)
	return Checkpoint{Origin: KeyOrigin(priv.Public().(ed25519.PublicKey)), Size: 10, Root: refRoot(data), Head: hexOf(data[9])}
}

func TestCheckpointSignOpen(t *testing.T) {
	priv := testKey(t)
	pub := priv.Public().(ed25519.PublicKey)
	c := testCheckpoint(priv)
	msg, err := Sign(c, priv)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(msg), "\n")
	if lines[0] != c.Origin || lines[1] != "10" || lines[3] != "head "+c.Head || lines[4] != "" || !strings.HasPrefix(lines[5], "— "+c.Origin+" ") {
		t.Fatalf("signed note is not in the tlog-checkpoint form:\n%s", msg)
	}
	for _, origin := range []string{c.Origin, ""} {
		got, _, err := Open(msg, origin, pub)
		if err != nil {
			t.Fatalf("Open(origin %q): %v", origin, err)
		}
		if got.Origin != c.Origin || got.Size != c.Size || !bytes.Equal(got.Root, c.Root) || got.Head != c.Head {
			t.Fatalf("Open = %+v, want %+v", got, c)
		}
	}
}

func TestCheckpointOpenRefuses(t *testing.T) {
	priv := testKey(t)
	pub := priv.Public().(ed25519.PublicKey)
	c := testCheckpoint(priv)
	msg, err := Sign(c, priv)
	if err != nil {
		t.Fatal(err)
	}
	other := testKey(t)
	noHead := c
	noHead.Head = ""
	noHeadMsg, err := Sign(noHead, priv)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		msg    []byte
		origin string
		pub    ed25519.PublicKey
	}{
		"ErrOtherKey":     {msg, c.Origin, other.Public().(ed25519.PublicKey)},
		"ErrOtherOrigin":  {msg, "custody/ledger/other", pub},
		"ErrTamperedSize": {bytes.Replace(msg, []byte("\n10\n"), []byte("\n11\n"), 1), c.Origin, pub},
		"ErrTamperedHead": {bytes.Replace(msg, []byte(c.Head[:8]), []byte("00000000"), 1), c.Origin, pub},
		"ErrNoHeadLine":   {noHeadMsg, c.Origin, pub},
		"ErrUnsigned":     {c.Text(), c.Origin, pub},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, _, err := Open(tc.msg, tc.origin, tc.pub); err == nil {
				t.Fatal("Open accepted it")
			}
		})
	}
}

func TestParseText(t *testing.T) {
	c := testCheckpoint(testKey(t))
	got, err := ParseText(c.Text())
	if err != nil || got.Size != c.Size || got.Head != c.Head || !bytes.Equal(got.Root, c.Root) {
		t.Fatalf("ParseText = %+v, %v", got, err)
	}
	for _, bad := range []string{
		"o\n10\n" + "AAAA\n" + "head " + c.Head + "\n",
		strings.Replace(string(c.Text()), "head ", "tail ", 1),
		strings.Replace(string(c.Text()), c.Head, strings.ToUpper(c.Head), 1),
		string(c.Text()) + "more\n",
	} {
		if _, err := ParseText([]byte(bad)); err == nil {
			t.Errorf("ParseText accepted %q", bad)
		}
	}
}
