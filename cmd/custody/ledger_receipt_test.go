package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/custody-dev/custody/store/sqlite"
	"github.com/custody-dev/custody/tlog"
)

// The helpers below follow C2SP tlog-cosignature (cosignature/v1) from
// the specification's text, apart from custody's own code, so that what
// custody serves is checked against the protocol and not against itself.

// specKeyID is the key ID of an Ed25519 cosigner: SHA-256(name ‖ "\n" ‖
// 0x04 ‖ public key)[:4].
func specKeyID(name string, pub ed25519.PublicKey) []byte {
	h := sha256.Sum256(append([]byte(name+"\n\x04"), pub...))
	return h[:4]
}

// specSignedMessage is what a cosigner signs: "cosignature/v1", the
// timestamp line, and the whole note body.
func specSignedMessage(ts uint64, text string) []byte {
	return fmt.Appendf(nil, "cosignature/v1\ntime %d\n%s", ts, text)
}

// specCosign returns the signature line the cosigner name with priv puts
// on the note body text at time ts.
func specCosign(name string, priv ed25519.PrivateKey, text string, ts uint64) string {
	sig := specKeyID(name, priv.Public().(ed25519.PublicKey))
	sig = binary.BigEndian.AppendUint64(sig, ts)
	sig = append(sig, ed25519.Sign(priv, specSignedMessage(ts, text))...)
	return "— " + name + " " + base64.StdEncoding.EncodeToString(sig) + "\n"
}

// specCheckCosigned checks that the signed note msg carries a valid
// cosignature by the cosigner name with key pub.
func specCheckCosigned(msg, name string, pub ed25519.PublicKey) error {
	i := strings.LastIndex(msg, "\n\n")
	if i < 0 {
		return errors.New("not a signed note")
	}
	text, sigs := msg[:i+1], msg[i+2:]
	for _, line := range strings.Split(strings.TrimSuffix(sigs, "\n"), "\n") {
		b64, ok := strings.CutPrefix(line, "— "+name+" ")
		if !ok {
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(raw) != 4+8+ed25519.SignatureSize || !bytes.Equal(raw[:4], specKeyID(name, pub)) {
			continue
		}
		if !ed25519.Verify(pub, specSignedMessage(binary.BigEndian.Uint64(raw[4:12]), text), raw[12:]) {
			return fmt.Errorf("the cosignature by %s does not verify", name)
		}
		return nil
	}
	return fmt.Errorf("no cosignature by %s with its key in\n%s", name, msg)
}

// vkeyPublic returns the ed25519 key of a note verifier key
// (name+hash+base64(0x01 ‖ key)).
func vkeyPublic(t *testing.T, vkey string) ed25519.PublicKey {
	t.Helper()
	parts := strings.SplitN(vkey, "+", 3)
	raw, err := base64.StdEncoding.DecodeString(parts[len(parts)-1])
	if len(parts) != 3 || err != nil || len(raw) != 1+ed25519.PublicKeySize || raw[0] != 1 {
		t.Fatalf("verifier key %q", vkey)
	}
	return raw[1:]
}

// cosignLatest has the witness name with priv cosign the store's latest
// checkpoint, and stores the cosignature as the witness client does.
func cosignLatest(t *testing.T, data, name string, priv ed25519.PrivateKey) {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, data, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n, err := db.NoteAt(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	text, _, err := tlog.SplitNote(n.Signed)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.AddCosignature(ctx, n.Size, name, specCosign(name, priv, string(text), 1767225600)); err != nil {
		t.Fatal(err)
	}
}

func TestCheckReceiptWitnessed(t *testing.T) {
	const w1, w2 = "witness.test/w1", "witness.test/w2"
	data := ledgerWithCheckpoints(t, 20)
	priv, vkey := newWitnessKey(t, w1)
	_, vkey2 := newWitnessKey(t, w2)
	cosignLatest(t, data, w1, priv)
	pub := priv.Public().(ed25519.PublicKey)

	// The receipt prove prints, as /v1/ledger/proof answers, carries the
	// cosignature the store holds.
	code, out, errOut := cli(t, data, "ledger", "prove", "--seq", "5")
	var r tlog.Receipt
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil {
		t.Fatalf("prove: exit %d: %s%s", code, out, errOut)
	}
	if err := specCheckCosigned(r.Checkpoint, w1, pub); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	receipt := writeFile(t, tmp, "receipt.json", out)
	logPub := filepath.Join(data, "signing.pub")
	keyFile := writeFile(t, tmp, "witnesses", "# the witnesses we trust\n"+w1+"="+base64.StdEncoding.EncodeToString(pub)+"\n")
	for name, w := range map[string]string{"NameAndKey": w1 + "=" + base64.StdEncoding.EncodeToString(pub), "VerifierKey": vkey, "NameAndVerifierKey": w1 + "=" + vkey, "File": keyFile} {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := cli(t, data, "ledger", "check-receipt", "--receipt", receipt, "--pubkey", logPub, "--witness", w)
			if code != 0 || !strings.HasPrefix(out, "ok: entry 5 ") || !strings.Contains(out, "cosigned by "+w1) {
				t.Fatalf("exit %d: %s%s", code, out, errOut)
			}
		})
	}

	variant := func(name string, edit func(r *tlog.Receipt)) string {
		v := r
		v.Proof = append([][]byte(nil), r.Proof...)
		edit(&v)
		b, _ := json.Marshal(v)
		return writeFile(t, tmp, name, string(b))
	}
	tampered := variant("tampered.json", func(v *tlog.Receipt) {
		h := append([]byte(nil), v.Proof[0]...)
		h[0] ^= 1
		v.Proof[0] = h
	})
	text, sigs, err := tlog.SplitNote([]byte(r.Checkpoint))
	if err != nil {
		t.Fatal(err)
	}
	logLine, _, _ := strings.Cut(string(sigs), "\n")
	stripped := variant("stripped.json", func(v *tlog.Receipt) { v.Checkpoint = string(text) + "\n" + logLine + "\n" })
	forged := variant("forged.json", func(v *tlog.Receipt) {
		// A line with the witness's name and key ID whose signature is
		// its signature of another checkpoint.
		v.Checkpoint = string(text) + "\n" + logLine + "\n" + specCosign(w1, priv, strings.Replace(string(text), "\n20\n", "\n21\n", 1), 1767225600)
	})
	other := ledgerWithCheckpoints(t, 3)
	cases := map[string]struct {
		args []string
		msg  string
	}{
		"ErrTamperedProof":        {[]string{"--receipt", tampered, "--pubkey", logPub, "--witness", vkey}, "inclusion of leaf 4 in tree of size 20"},
		"ErrWrongLogKey":          {[]string{"--receipt", receipt, "--pubkey", filepath.Join(other, "signing.pub"), "--witness", vkey}, "not signed by the ledger's key"},
		"ErrMissingCosignature":   {[]string{"--receipt", stripped, "--pubkey", logPub, "--witness", vkey}, "carries no cosignature by witness " + w1},
		"ErrUnknownWitness":       {[]string{"--receipt", receipt, "--pubkey", logPub, "--witness", vkey, "--witness", vkey2}, "carries no cosignature by witness " + w2},
		"ErrForgedCosignature":    {[]string{"--receipt", forged, "--pubkey", logPub, "--witness", vkey}, "the cosignature of witness " + w1 + " does not verify"},
		"ErrCosignatureOtherNote": {[]string{"--receipt", forged, "--pubkey", logPub, "--witness", w1 + "=" + base64.StdEncoding.EncodeToString(pub)}, "does not verify"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := cli(t, data, append([]string{"ledger", "check-receipt"}, tc.args...)...)
			if code != exitFailed || !strings.Contains(errOut, "FAILED") || !strings.Contains(errOut, tc.msg) {
				t.Fatalf("exit %d, want %d with %q: %s%s", code, exitFailed, tc.msg, out, errOut)
			}
		})
	}
	for name, args := range map[string][]string{
		"ErrBadWitnessKey":  {"--receipt", receipt, "--pubkey", logPub, "--witness", w1 + "=not-a-key"},
		"ErrWitnessNameKey": {"--receipt", receipt, "--pubkey", logPub, "--witness", w2 + "=" + vkey},
		"ErrTwoReceipts":    {receipt, "--receipt", receipt, "--pubkey", logPub},
	} {
		t.Run(name, func(t *testing.T) {
			if code, _, errOut := cli(t, data, append([]string{"ledger", "check-receipt"}, args...)...); code != exitUsage {
				t.Fatalf("exit %d, want %d: %s", code, exitUsage, errOut)
			}
		})
	}
}
