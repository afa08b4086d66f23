package ledger

import (
	"encoding/hex"
	"fmt"

	"github.com/custody-dev/custody"
)

// Canonicalizer canonicalizes documents as AppendCanonical does, keeping
// its working buffers between documents, so that a long-lived one (pooled
// by a busy caller, say) stops allocating once it has seen the largest
// document. The zero value is ready to use. A Canonicalizer is not safe
// for concurrent use.
type Canonicalizer struct {
	c   canon
	out []byte // Check's output, kept for the next document
}

// Append appends the canonical form of raw to dst, exactly as
// AppendCanonical does: on error it returns dst unchanged and a
// *SyntaxError.
func (z *Canonicalizer) Append(dst, raw []byte) ([]byte, error) {
	return z.c.appendDoc(dst, raw)
}

// Check reports, as Check does, whether raw is a document Canonicalize
// accepts.
func (z *Canonicalizer) Check(raw []byte) error {
	out, err := z.c.appendDoc(z.out[:0], raw)
	z.out = out[:0]
	return err
}

// Sealer seals entries as Seal does, keeping its buffers between entries:
// a writer sealing entries one after another stops allocating for the
// canonical form it hashes. The zero value is ready to use. A Sealer is
// not safe for concurrent use.
type Sealer struct {
	h hasher
}

// Seal is Seal with the Sealer's buffers.
func (s *Sealer) Seal(prev string, e *custody.Entry) error {
	return s.seal(prev, e, nil)
}

// SealCanonical is Seal for an entry whose body was already canonicalized:
// canonBody must be the canonical form of e.Body, as Canonicalize or
// Canonicalizer.Append returned it. The body is then not parsed again; the
// hash is the one Seal computes, provided canonBody is what it must be.
// An empty canonBody means none was given and the body is canonicalized
// here.
func (s *Sealer) SealCanonical(prev string, e *custody.Entry, canonBody []byte) error {
	if len(canonBody) == 0 {
		canonBody = nil
	}
	return s.seal(prev, e, canonBody)
}

func (s *Sealer) seal(prev string, e *custody.Entry, canonBody []byte) error {
	if prev == "" {
		prev = genesisPrev
	}
	if e.Refs == nil {
		e.Refs = map[string]string{}
	}
	e.BodySHA256 = bodySHA256(e.Body)
	e.Prev = prev
	sum, err := s.h.entryHashCanonical(e, nil, canonBody)
	if err != nil {
		return fmt.Errorf("seal entry %d: %w", e.Seq, err)
	}
	e.Hash = hex.EncodeToString(sum[:])
	return nil
}
