package tlog

import (
	"bytes"
	"crypto/ed25519"
	"fmt"

	"golang.org/x/mod/sumdb/note"
)

// Receipt is what a caller needs to check offline that its entry is in the
// ledger: the entry's seq and chain hash, the checkpoint that covers it as
// a signed note (with the witnesses' cosignatures the log holds for it),
// and the inclusion proof of the entry in that checkpoint's tree.
type Receipt struct {
	Seq        uint64   `json:"seq"`
	Hash       string   `json:"hash"`
	Size       uint64   `json:"size"`
	Proof      [][]byte `json:"proof"`
	Checkpoint string   `json:"checkpoint"`
}

// Verify checks r with the ledger's public key: the checkpoint's
// signature (under origin, or under the origin it names when origin is
// empty), that it is of r.Size, and the proof of the entry against its
// root. It returns the checkpoint.
func (r Receipt) Verify(pub ed25519.PublicKey, origin string) (Checkpoint, error) {
	c, _, err := Open([]byte(r.Checkpoint), origin, pub)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("receipt of entry %d: %w", r.Seq, err)
	}
	if c.Size != r.Size {
		return Checkpoint{}, fmt.Errorf("receipt of entry %d: the checkpoint is of size %d, the proof of size %d", r.Seq, c.Size, r.Size)
	}
	if r.Seq < 1 || r.Seq > r.Size {
		return Checkpoint{}, fmt.Errorf("receipt of entry %d: not in a tree of size %d", r.Seq, r.Size)
	}
	leaf, err := EntryLeafHash(r.Hash)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("receipt of entry %d: %w", r.Seq, err)
	}
	if err := VerifyInclusion(r.Seq-1, r.Size, leaf, r.Proof, c.Root); err != nil {
		return Checkpoint{}, fmt.Errorf("receipt of entry %d: %w", r.Seq, err)
	}
	return c, nil
}

// Consistency is the proof that the ledger at size From is a prefix of the
// ledger at size To, with the checkpoints of both sizes as signed notes
// (empty when no checkpoint was signed at that size).
type Consistency struct {
	From           uint64   `json:"from"`
	To             uint64   `json:"to"`
	Proof          [][]byte `json:"proof"`
	FromCheckpoint string   `json:"from_checkpoint,omitempty"`
	ToCheckpoint   string   `json:"to_checkpoint,omitempty"`
}

// Verify checks both checkpoints' signatures with pub and the proof
// between their roots.
func (p Consistency) Verify(pub ed25519.PublicKey, origin string) error {
	from, _, err := Open([]byte(p.FromCheckpoint), origin, pub)
	if err != nil {
		return fmt.Errorf("consistency: checkpoint %d: %w", p.From, err)
	}
	to, _, err := Open([]byte(p.ToCheckpoint), from.Origin, pub)
	if err != nil {
		return fmt.Errorf("consistency: checkpoint %d: %w", p.To, err)
	}
	if from.Size != p.From || to.Size != p.To {
		return fmt.Errorf("consistency: checkpoints of sizes %d and %d for a proof from %d to %d", from.Size, to.Size, p.From, p.To)
	}
	if from.Size == to.Size && !bytes.Equal(from.Root, to.Root) {
		return fmt.Errorf("consistency: two checkpoints of size %d with different roots", from.Size)
	}
	return VerifyConsistency(p.From, p.To, p.Proof, from.Root, to.Root)
}

// VerifyWitnessed checks r as Verify does and, besides, that every
// witness in ws cosigned its checkpoint: a *CosignatureError names the
// first that did not.
func (r Receipt) VerifyWitnessed(pub ed25519.PublicKey, origin string, ws []note.Verifier) (Checkpoint, error) {
	c, err := r.Verify(pub, origin)
	if err != nil {
		return c, err
	}
	text, sigBytes, err := SplitNote([]byte(r.Checkpoint))
	if err != nil {
		return c, fmt.Errorf("receipt of entry %d: %w", r.Seq, err)
	}
	sigs, err := ParseSigLines(sigBytes)
	if err != nil {
		return c, fmt.Errorf("receipt of entry %d: %w", r.Seq, err)
	}
	if err := CheckCosignatures(text, sigs, ws); err != nil {
		return c, fmt.Errorf("receipt of entry %d: checkpoint %d: %w", r.Seq, c.Size, err)
	}
	return c, nil
}
