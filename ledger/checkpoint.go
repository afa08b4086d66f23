package ledger

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"strconv"

	"github.com/custody-dev/custody"
)

// checkpointPrefix opens every signed checkpoint message; the version lets
// the format change without a signature for one being valid for another.
// Version 2 names the ledger; version 1, written before ledgers had ids,
// still verifies.
const (
	checkpointPrefix   = "custody-checkpoint/v1\n"
	checkpointPrefixV2 = "custody-checkpoint/v2\n"
)

// CheckpointMessage returns the bytes a checkpoint signature covers:
//
//	"custody-checkpoint/v1\n" <size in decimal> "\n" <head> "\n" <at> "\n"
//
// Because VerifyCheckpoint requires head to be 64 lowercase hex digits and
// size to be a plain decimal, no two checkpoints share a message.
func CheckpointMessage(size int64, head, at string) []byte {
	msg := make([]byte, 0, len(checkpointPrefix)+20+len(head)+len(at)+3)
	msg = append(msg, checkpointPrefix...)
	msg = strconv.AppendInt(msg, size, 10)
	msg = append(msg, '\n')
	msg = append(msg, head...)
	msg = append(msg, '\n')
	msg = append(msg, at...)
	return append(msg, '\n')
}

// LedgerCheckpointMessage returns the bytes the signature of a checkpoint
// of the ledger with id ledgerID covers:
//
//	"custody-checkpoint/v2\n" <ledger id> "\n" <size in decimal> "\n" <head> "\n" <at> "\n"
//
// The id is 32 lowercase hex digits (see CheckLedgerID), so no two
// checkpoints share a message, and a checkpoint of one ledger is never a
// valid checkpoint of another.
func LedgerCheckpointMessage(ledgerID string, size int64, head, at string) []byte {
	msg := make([]byte, 0, len(checkpointPrefixV2)+len(ledgerID)+20+len(head)+len(at)+4)
	msg = append(msg, checkpointPrefixV2...)
	msg = append(msg, ledgerID...)
	msg = append(msg, '\n')
	return append(msg, CheckpointMessage(size, head, at)[len(checkpointPrefix):]...)
}

// checkpointMessage returns the bytes cp's signature covers: version 2
// when cp names its ledger, version 1 otherwise.
func checkpointMessage(cp custody.Checkpoint) []byte {
	if cp.Ledger != "" {
		return LedgerCheckpointMessage(cp.Ledger, cp.Size, cp.Head, cp.At)
	}
	return CheckpointMessage(cp.Size, cp.Head, cp.At)
}

// SignLedgerCheckpoint returns the checkpoint stating that the ledger with
// id ledgerID held size entries whose last hash is head (hex), signed at
// the time at, over LedgerCheckpointMessage. Stores write these.
func SignLedgerCheckpoint(priv ed25519.PrivateKey, ledgerID string, size int64, head, at string) custody.Checkpoint {
	sig := ed25519.Sign(priv, LedgerCheckpointMessage(ledgerID, size, head, at))
	return custody.Checkpoint{Ledger: ledgerID, Size: size, Head: head, At: at, Sig: base64.StdEncoding.EncodeToString(sig)}
}

// LedgerIDLen is the length of a ledger id: 16 random bytes in lowercase
// hex.
const LedgerIDLen = 32

// CheckLedgerID reports whether id is a well-formed ledger id: 32
// lowercase hex digits.
func CheckLedgerID(id string) error {
	if len(id) != LedgerIDLen || !isLowerHex(id) {
		return fmt.Errorf("ledger id %q is not %d lowercase hex digits", id, LedgerIDLen)
	}
	return nil
}

// VerifyCheckpoint reports whether cp is well formed (a size of at least
// zero, a head of 64 lowercase hex digits) and carries a valid signature by
// pub. It says nothing about whether the checkpoint matches a ledger: that
// is the Verifier's job.
func VerifyCheckpoint(pub ed25519.PublicKey, cp custody.Checkpoint) error {
	if err := verifyCheckpoint(pub, cp); err != nil {
		return fmt.Errorf("verify checkpoint: %w", err)
	}
	return nil
}

func verifyCheckpoint(pub ed25519.PublicKey, cp custody.Checkpoint) error {
	if err := checkCheckpointForm(cp); err != nil {
		return err
	}
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("public key has %d bytes, want %d", len(pub), ed25519.PublicKeySize)
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(cp.Sig)
	if err != nil {
		return fmt.Errorf("sig is not standard base64: %w", err)
	}
	if len(sig) != ed25519.SignatureSize {
		return fmt.Errorf("sig has %d bytes, want %d", len(sig), ed25519.SignatureSize)
	}
	if !ed25519.Verify(pub, checkpointMessage(cp), sig) {
		return errors.New("signature does not verify with this key")
	}
	return nil
}

// checkCheckpointForm refuses checkpoints whose fields could make two
// different checkpoints share a signed message.
func checkCheckpointForm(cp custody.Checkpoint) error {
	if cp.Size < 0 {
		return fmt.Errorf("size %d is negative", cp.Size)
	}
	if !isHashHex(cp.Head) {
		return fmt.Errorf("head %q is not 64 lowercase hex digits", cp.Head)
	}
	if cp.Ledger != "" {
		return CheckLedgerID(cp.Ledger)
	}
	return nil
}

// isHashHex reports whether s is a SHA-256 hash in lowercase hex, the only
// spelling this package writes.
func isHashHex(s string) bool {
	return len(s) == 2*32 && isLowerHex(s)
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// MarshalPublicKey returns pub, which must be ed25519.PublicKeySize bytes,
// as a PEM "PUBLIC KEY" block (PKIX), the form `custody ledger verify
// --pubkey` reads.
func MarshalPublicKey(pub ed25519.PublicKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		// x509 cannot fail on an ed25519.PublicKey: it copies the bytes.
		panic(fmt.Sprintf("ledger: marshal ed25519 public key: %v", err))
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// ParsePublicKey reads the first PEM block of text, which must be a
// "PUBLIC KEY" (PKIX) holding an ed25519 key.
func ParsePublicKey(text []byte) (ed25519.PublicKey, error) {
	der, err := pemBlock(text, "PUBLIC KEY")
	if err != nil {
		return nil, fmt.Errorf("parse public key: %w", err)
	}
	key, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, fmt.Errorf("parse public key: %w", err)
	}
	pub, ok := key.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("parse public key: a %T, not an ed25519 key", key)
	}
	return pub, nil
}

// ParsePublicKeys reads every PEM block of text, each a "PUBLIC KEY"
// holding an ed25519 key, in order: the keys of a ledger whose key was
// rotated, oldest first. Text between blocks is ignored.
func ParsePublicKeys(text []byte) ([]ed25519.PublicKey, error) {
	var keys []ed25519.PublicKey
	for {
		block, rest := pem.Decode(text)
		if block == nil {
			break
		}
		pub, err := ParsePublicKey(text[:len(text)-len(rest)])
		if err != nil {
			return nil, fmt.Errorf("key %d: %w", len(keys)+1, err)
		}
		keys, text = append(keys, pub), rest
	}
	if len(keys) == 0 {
		return nil, errors.New("parse public keys: no PEM block found")
	}
	return keys, nil
}

// MarshalPrivateKey returns priv as a PEM "PRIVATE KEY" block (PKCS #8).
// It fails only when priv is not a valid ed25519 private key.
func MarshalPrivateKey(priv ed25519.PrivateKey) ([]byte, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("marshal private key: %d bytes, want %d", len(priv), ed25519.PrivateKeySize)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("marshal private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParsePrivateKey reads the first PEM block of text, which must be a
// "PRIVATE KEY" (PKCS #8) holding an ed25519 key.
func ParsePrivateKey(text []byte) (ed25519.PrivateKey, error) {
	der, err := pemBlock(text, "PRIVATE KEY")
	if err != nil {
		return nil, fmt.Errorf("parse private key: %w", err)
	}
	key, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("parse private key: %w", err)
	}
	priv, ok := key.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("parse private key: a %T, not an ed25519 key", key)
	}
	return priv, nil
}

func pemBlock(text []byte, typ string) ([]byte, error) {
	block, _ := pem.Decode(text)
	if block == nil {
		return nil, errors.New("no PEM block found")
	}
	if block.Type != typ {
		return nil, fmt.Errorf("PEM block is %q, want %q", block.Type, typ)
	}
	if len(block.Headers) != 0 {
		return nil, errors.New("PEM block has headers (an encrypted key?)")
	}
	return block.Bytes, nil
}
