package ledger

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
)

func TestCheckpointMessage(t *testing.T) {
	head := strings.Repeat("ab", 32)
	got := string(CheckpointMessage(1234, head, "2026-03-01T12:00:00.000000Z"))
	want := "custody-checkpoint/v1\n1234\n" + head + "\n2026-03-01T12:00:00.000000Z\n"
	if got != want {
		t.Errorf("CheckpointMessage = %q, want %q", got, want)
	}
}

func TestVerifyCheckpoint(t *testing.T) {
	priv := testKey()
	pub := priv.Public().(ed25519.PublicKey)
	head := strings.Repeat("0f", 32)
	good := SignCheckpoint(priv, 42, head, "2026-03-01T12:00:00.000000Z")
	tests := []struct {
		name string
		edit func(cp *custody.Checkpoint, pub *ed25519.PublicKey)
		want string
	}{
		{"OK", func(*custody.Checkpoint, *ed25519.PublicKey) {}, ""},
		{"SizeChanged", func(cp *custody.Checkpoint, _ *ed25519.PublicKey) { cp.Size = 43 }, "does not verify"},
		{"HeadChanged", func(cp *custody.Checkpoint, _ *ed25519.PublicKey) { cp.Head = strings.Repeat("1f", 32) }, "does not verify"},
		{"AtChanged", func(cp *custody.Checkpoint, _ *ed25519.PublicKey) { cp.At = "2026-03-01T12:00:00.000001Z" }, "does not verify"},
		{"SigFlipped", func(cp *custody.Checkpoint, _ *ed25519.PublicKey) {
			sig, _ := base64.StdEncoding.DecodeString(cp.Sig)
			sig[0] ^= 0x80
			cp.Sig = base64.StdEncoding.EncodeToString(sig)
		}, "does not verify"},
		{"SigNotBase64", func(cp *custody.Checkpoint, _ *ed25519.PublicKey) { cp.Sig = "not base64!" }, "not standard base64"},
		{"SigURLBase64", func(cp *custody.Checkpoint, _ *ed25519.PublicKey) {
			sig, _ := base64.StdEncoding.DecodeString(cp.Sig)
			cp.Sig = base64.RawURLEncoding.EncodeToString(sig)
		}, "not standard base64"},
		{"SigShort", func(cp *custody.Checkpoint, _ *ed25519.PublicKey) {
			cp.Sig = base64.StdEncoding.EncodeToString([]byte("short"))
		}, "sig has 5 bytes"},
		{"SigEmpty", func(cp *custody.Checkpoint, _ *ed25519.PublicKey) { cp.Sig = "" }, "sig has 0 bytes"},
		{"HeadUppercase", func(cp *custody.Checkpoint, _ *ed25519.PublicKey) { cp.Head = strings.ToUpper(cp.Head) }, "not 64 lowercase hex"},
		{"HeadWithNewline", func(cp *custody.Checkpoint, _ *ed25519.PublicKey) { cp.Head = head[:63] + "\n" }, "not 64 lowercase hex"},
		{"NegativeSize", func(cp *custody.Checkpoint, _ *ed25519.PublicKey) { cp.Size = -1 }, "negative"},
		{"WrongKey", func(_ *custody.Checkpoint, pub *ed25519.PublicKey) {
			*pub = ed25519.NewKeyFromSeed(make([]byte, 32)).Public().(ed25519.PublicKey)
		}, "does not verify with this key"},
		{"ShortKey", func(_ *custody.Checkpoint, pub *ed25519.PublicKey) { *pub = (*pub)[:31] }, "public key has 31 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cp, key := good, bytes.Clone(pub)
			tt.edit(&cp, (*ed25519.PublicKey)(&key))
			err := VerifyCheckpoint(key, cp)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("VerifyCheckpoint: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("VerifyCheckpoint error = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestKeyPEMRoundTrip(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	privPEM, err := MarshalPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(privPEM, []byte("-----BEGIN PRIVATE KEY-----\n")) {
		t.Errorf("private key PEM = %q", privPEM)
	}
	priv2, err := ParsePrivateKey(privPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !priv.Equal(priv2) {
		t.Error("private key changed in the round trip")
	}
	pubPEM := MarshalPublicKey(pub)
	if !bytes.HasPrefix(pubPEM, []byte("-----BEGIN PUBLIC KEY-----\n")) {
		t.Errorf("public key PEM = %q", pubPEM)
	}
	pub2, err := ParsePublicKey(pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !pub.Equal(pub2) {
		t.Error("public key changed in the round trip")
	}
	cp := SignCheckpoint(priv2, 1, strings.Repeat("0", 64), "t")
	if err := VerifyCheckpoint(pub2, cp); err != nil {
		t.Errorf("a checkpoint signed with the parsed key does not verify with the parsed public key: %v", err)
	}
}

func TestParseKeyErrors(t *testing.T) {
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecPub, _ := x509.MarshalPKIXPublicKey(&ecKey.PublicKey)
	ecPriv, _ := x509.MarshalPKCS8PrivateKey(ecKey)
	privPEM, _ := MarshalPrivateKey(testKey())
	pubPEM := MarshalPublicKey(testKey().Public().(ed25519.PublicKey))
	block := func(typ string, der []byte, headers map[string]string) []byte {
		return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der, Headers: headers})
	}
	tests := []struct {
		name    string
		text    []byte
		private bool
		want    string
	}{
		{"PublicEmpty", nil, false, "no PEM block found"},
		{"PublicGarbage", []byte("ssh-ed25519 AAAA"), false, "no PEM block found"},
		{"PublicGivenPrivate", privPEM, false, `PEM block is "PRIVATE KEY", want "PUBLIC KEY"`},
		{"PublicBadDER", block("PUBLIC KEY", []byte{0x30, 0x01}, nil), false, "parse public key: asn1"},
		{"PublicECDSA", block("PUBLIC KEY", ecPub, nil), false, "not an ed25519 key"},
		{"PrivateEmpty", nil, true, "no PEM block found"},
		{"PrivateGivenPublic", pubPEM, true, `PEM block is "PUBLIC KEY", want "PRIVATE KEY"`},
		{"PrivateBadDER", block("PRIVATE KEY", []byte("nope"), nil), true, "parse private key: asn1"},
		{"PrivateECDSA", block("PRIVATE KEY", ecPriv, nil), true, "not an ed25519 key"},
		{"PrivateEncrypted", block("PRIVATE KEY", []byte("x"), map[string]string{"Proc-Type": "4,ENCRYPTED"}), true, "has headers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.private {
				_, err = ParsePrivateKey(tt.text)
			} else {
				_, err = ParsePublicKey(tt.text)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestMarshalPrivateKeyRefusesBadKey(t *testing.T) {
	if _, err := MarshalPrivateKey(ed25519.PrivateKey("short")); err == nil {
		t.Error("MarshalPrivateKey accepted a 5-byte key")
	}
}
