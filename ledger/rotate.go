package ledger

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/custody-dev/custody"
)

// KeyRotatedKind is the kind of the entry that records a new checkpoint
// signing key. Its body is a KeyRotation.
const KeyRotatedKind = "ledger.key.rotated"

// KeyRotation is the body of a KeyRotatedKind entry: the key in force
// before the entry and the one in force from the entry's seq on, each as
// 64 lowercase hex digits (the 32 bytes of the ed25519 public key).
type KeyRotation struct {
	Old string `json:"old"`
	New string `json:"new"`
	// AcceptedTail names the entries after the last checkpoint that the
	// old key, lost, could not vouch for and that the operator accepted.
	AcceptedTail *SeqRange `json:"accepted_tail,omitempty"`
}

// SeqRange is the entries from seq From to seq To, both included.
type SeqRange struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// Body returns r as an entry body.
func (r KeyRotation) Body() []byte {
	b, _ := json.Marshal(r)
	return b
}

// parseKeyRotation reads a KeyRotatedKind body.
func parseKeyRotation(body []byte) (old, new ed25519.PublicKey, err error) {
	var r KeyRotation
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, nil, fmt.Errorf("not a key rotation: %w", err)
	}
	if old, err = parseHexKey(r.Old); err == nil {
		new, err = parseHexKey(r.New)
	}
	return old, new, err
}

func parseHexKey(s string) (ed25519.PublicKey, error) {
	if len(s) != 2*ed25519.PublicKeySize || !isLowerHex(s) {
		return nil, fmt.Errorf("key %q is not %d lowercase hex digits", s, 2*ed25519.PublicKeySize)
	}
	b, _ := hex.DecodeString(s)
	return ed25519.PublicKey(b), nil
}

// rotate records the rotation entry e: the key it names as old must be the
// key in force, when one is known, and the new one is in force from e on.
func (v *Verifier) rotate(e *custody.Entry) *VerifyError {
	old, new, err := parseKeyRotation(e.Body)
	if err != nil {
		return &VerifyError{Seq: e.Seq, Reason: err.Error()}
	}
	cur := &v.eras[len(v.eras)-1]
	switch {
	case cur.key == nil:
		cur.key = old
	case !cur.key.Equal(old):
		return &VerifyError{Seq: e.Seq, Reason: fmt.Sprintf(
			"the key rotation names %x as the old key, but %x signs the checkpoints before it", []byte(old), []byte(cur.key))}
	}
	v.eras = append(v.eras, era{from: e.Seq, key: new})
	return nil
}

// signedInForce checks cp's signature against the key in force at its
// size; with no trusted keys it checks nothing.
func (v *Verifier) signedInForce(cp custody.Checkpoint) *VerifyError {
	if len(v.trusted) == 0 {
		return nil
	}
	fail := func(format string, args ...any) *VerifyError {
		return &VerifyError{Seq: cp.Size, Reason: fmt.Sprintf("checkpoint at size %d: ", cp.Size) + fmt.Sprintf(format, args...)}
	}
	e := v.eraAt(cp.Size)
	if e.key == nil {
		// The first checkpoint before any rotation names the ledger's
		// first key: whichever trusted key signed it.
		if len(v.trusted) == 1 {
			if err := verifyCheckpoint(v.trusted[0], cp); err != nil {
				return fail("%v", err)
			}
			e.key = v.trusted[0]
			return nil
		}
		for _, k := range v.trusted {
			if verifyCheckpoint(k, cp) == nil {
				e.key = k
				return nil
			}
		}
		return fail("the signature does not verify with any trusted key")
	}
	if !v.isTrusted(e.key) {
		return fail("it must be signed by %x, the key in force from seq %d, which is not a trusted key", []byte(e.key), e.from)
	}
	if err := verifyCheckpoint(e.key, cp); err != nil {
		return fail("%v (the key in force from seq %d is %x)", err, e.from, []byte(e.key))
	}
	return nil
}

// eraAt returns the era a checkpoint of size belongs to.
func (v *Verifier) eraAt(size int64) *era {
	for i := len(v.eras) - 1; i > 0; i-- {
		if v.eras[i].from <= size {
			return &v.eras[i]
		}
	}
	return &v.eras[0]
}

func (v *Verifier) isTrusted(k ed25519.PublicKey) bool {
	for _, t := range v.trusted {
		if t.Equal(k) {
			return true
		}
	}
	return false
}
