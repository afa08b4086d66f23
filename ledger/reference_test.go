package ledger

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/custody-dev/custody"
)

// What the tests seal, sign and verify with besides the package's own
// API: the chain rule computed the plain way, one entry at a time, that
// Sealer and Verifier are held to, and the writers of what the program
// no longer writes but still verifies.

// Seal is Sealer.Seal computed afresh for every entry: it decodes prev
// and allocates its buffers each time.
func Seal(prev string, e *custody.Entry) error {
	if prev == "" {
		prev = genesisPrev
	}
	if e.Refs == nil {
		e.Refs = map[string]string{}
	}
	e.BodySHA256 = bodySHA256(e.Body)
	e.Prev = prev
	h, err := EntryHash(e)
	if err != nil {
		return fmt.Errorf("seal entry %d: %w", e.Seq, err)
	}
	e.Hash = h
	return nil
}

// EntryHash computes hash = SHA-256(prev_hash_bytes ‖ JCS(entry without
// "hash")) for e as it stands, hex encoded. Prev must be 64 lowercase hex
// digits.
func EntryHash(e *custody.Entry) (string, error) {
	var h hasher
	sum, err := h.entryHash(e, nil)
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(sum[:]), nil
}

// AppendEntryCanonical appends JCS(e without "hash") to dst.
func AppendEntryCanonical(dst []byte, e *custody.Entry) ([]byte, error) {
	var h hasher
	return h.appendEntry(dst, e)
}

// Entry verifies the next entry as Entries does a batch of one, computed
// in the caller's goroutine.
func (v *Verifier) Entry(e *custody.Entry) error {
	if v.err != nil {
		return v.err
	}
	if err := v.link(e, v.h.examine(e)); err != nil {
		v.err = err
		return err
	}
	return nil
}

// SignCheckpoint returns a checkpoint as ledgers signed them before they
// had ids: over CheckpointMessage, naming no ledger.
func SignCheckpoint(priv ed25519.PrivateKey, size int64, head, at string) custody.Checkpoint {
	sig := ed25519.Sign(priv, CheckpointMessage(size, head, at))
	return custody.Checkpoint{Size: size, Head: head, At: at, Sig: base64.StdEncoding.EncodeToString(sig)}
}

// KeyRotationBody returns the body of the entry recording that new
// replaces old.
func KeyRotationBody(old, new ed25519.PublicKey) []byte {
	return KeyRotation{Old: hex.EncodeToString(old), New: hex.EncodeToString(new)}.Body()
}

// VerifyJSONLKeys is VerifyJSONLSeeing without seen.
func VerifyJSONLKeys(r io.Reader, keys ...ed25519.PublicKey) (Report, error) {
	return verifyJSONL(r, NewStreamVerifier(keys...), nil)
}

// SetMaxLine sets the longest line, in bytes without its end, that the
// Decoder accepts.
func (d *Decoder) SetMaxLine(n int) { d.max = n }
