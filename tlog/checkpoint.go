package tlog

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
)

// headPrefix opens the extension line that carries the chain head.
const headPrefix = "head "

// Checkpoint is a tree head: the log's origin, the tree's size and root
// hash, and the ledger's chain head (the hex hash of entry Size).
type Checkpoint struct {
	Origin string
	Size   uint64
	Root   []byte
	Head   string
}

// Text returns the checkpoint's note text in the C2SP tlog-checkpoint
// format, the chain head as its one extension line.
func (c Checkpoint) Text() []byte {
	text := log.Checkpoint{Origin: c.Origin, Size: c.Size, Hash: c.Root}.Marshal()
	return fmt.Appendf(text, "%s%s\n", headPrefix, c.Head)
}

// ParseText reads a checkpoint's note text, as Text writes it.
func ParseText(text []byte) (Checkpoint, error) {
	var lc log.Checkpoint
	rest, err := lc.Unmarshal(text)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("parse checkpoint: %w", err)
	}
	c, err := fromLog(lc, rest)
	if err != nil {
		return Checkpoint{}, err
	}
	return c, canonical(c, text)
}

// canonical refuses a checkpoint text other than the one Text writes for
// c: the root hash's base64, for one, decodes with line breaks in it, and
// no two texts may mean the same checkpoint.
func canonical(c Checkpoint, text []byte) error {
	if !bytes.Equal(c.Text(), text) {
		return fmt.Errorf("parse checkpoint: %q is not in the canonical form %q", text, c.Text())
	}
	return nil
}

func fromLog(lc log.Checkpoint, rest []byte) (Checkpoint, error) {
	head, ok := bytes.CutPrefix(rest, []byte(headPrefix))
	if !ok || len(head) != 2*HashSize+1 || head[len(head)-1] != '\n' {
		return Checkpoint{}, fmt.Errorf("parse checkpoint: want one extension line %q followed by the chain head, got %q", headPrefix, rest)
	}
	h := string(head[:len(head)-1])
	if b, err := hex.DecodeString(h); err != nil || hex.EncodeToString(b) != h {
		return Checkpoint{}, fmt.Errorf("parse checkpoint: chain head %q is not lowercase hex", h)
	}
	if len(lc.Hash) != HashSize {
		return Checkpoint{}, fmt.Errorf("parse checkpoint: root hash has %d bytes, want %d", len(lc.Hash), HashSize)
	}
	return Checkpoint{Origin: lc.Origin, Size: lc.Size, Root: lc.Hash, Head: h}, nil
}

// VerifierKey returns the note verifier key of the log named origin whose
// checkpoints pub verifies, the form a witness is told a log's key in
// (for litewitness: witnessctl add-key -key).
func VerifierKey(origin string, pub ed25519.PublicKey) (string, error) {
	vkey, err := note.NewEd25519VerifierKey(origin, pub)
	if err != nil {
		return "", fmt.Errorf("verifier key for %q: %w", origin, err)
	}
	return vkey, nil
}

// NewVerifier returns the note verifier of the log named origin whose
// checkpoints pub verifies.
func NewVerifier(origin string, pub ed25519.PublicKey) (note.Verifier, error) {
	vkey, err := VerifierKey(origin, pub)
	if err != nil {
		return nil, err
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, fmt.Errorf("verifier for %q: %w", origin, err)
	}
	return v, nil
}

// signer signs notes with an ed25519 key under a name.
type signer struct {
	name string
	hash uint32
	priv ed25519.PrivateKey
}

func (s *signer) Name() string                    { return s.name }
func (s *signer) KeyHash() uint32                 { return s.hash }
func (s *signer) Sign(msg []byte) ([]byte, error) { return ed25519.Sign(s.priv, msg), nil }

// NewSigner returns the note signer of the log named origin, signing with
// priv; NewVerifier with priv's public key verifies what it signs.
func NewSigner(origin string, priv ed25519.PrivateKey) (note.Signer, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("signer for %q: private key has %d bytes", origin, len(priv))
	}
	v, err := NewVerifier(origin, priv.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, err
	}
	return &signer{name: origin, hash: v.KeyHash(), priv: priv}, nil
}

// Sign returns c as a signed note: its text, a blank line and the log's
// signature line.
func Sign(c Checkpoint, priv ed25519.PrivateKey) ([]byte, error) {
	if len(c.Root) != HashSize {
		return nil, fmt.Errorf("sign checkpoint: root hash has %d bytes", len(c.Root))
	}
	s, err := NewSigner(c.Origin, priv)
	if err != nil {
		return nil, err
	}
	msg, err := note.Sign(&note.Note{Text: string(c.Text())}, s)
	if err != nil {
		return nil, fmt.Errorf("sign checkpoint %d: %w", c.Size, err)
	}
	return msg, nil
}

// Open verifies the log's signature on the signed note msg with pub and
// returns its checkpoint, which must name origin (any origin when origin
// is empty: the key alone is then trusted). Other signature lines, such as
// cosignatures, are left unverified in the note.
func Open(msg []byte, origin string, pub ed25519.PublicKey) (Checkpoint, *note.Note, error) {
	if origin == "" {
		first, _, _ := strings.Cut(string(msg), "\n")
		origin = first
	}
	v, err := NewVerifier(origin, pub)
	if err != nil {
		return Checkpoint{}, nil, err
	}
	lc, rest, n, err := log.ParseCheckpoint(msg, origin, v)
	if err != nil {
		return Checkpoint{}, nil, fmt.Errorf("open checkpoint: %w", err)
	}
	c, err := fromLog(*lc, rest)
	if err != nil {
		return Checkpoint{}, nil, err
	}
	if err := canonical(c, []byte(n.Text)); err != nil {
		return Checkpoint{}, nil, err
	}
	return c, n, nil
}

// SplitNote returns the text of a signed note and its signature lines,
// each ending in a newline.
func SplitNote(msg []byte) (text []byte, sigs []byte, err error) {
	i := bytes.LastIndex(msg, []byte("\n\n"))
	if i < 0 || len(msg) == i+2 || msg[len(msg)-1] != '\n' {
		return nil, nil, errors.New("malformed note: no signature lines")
	}
	return msg[:i+1], msg[i+2:], nil
}
