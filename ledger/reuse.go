package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

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

// Sealer puts entries on the chain, keeping its buffers between entries:
// a writer sealing entries one after another stops allocating for the
// canonical form it hashes. The zero value is ready to use. A Sealer is
// not safe for concurrent use.
type Sealer struct {
	h hasher
	// last is the hash of the entry sealed last, in hex and in bytes: the
	// prev of the next entry, which then needs no decoding.
	lastHex string
	last    [32]byte
}

// Seal completes e as the entry following prev (hex; "" means genesis):
// it sets Prev, BodySHA256 (of the exact body bytes), an empty Refs when
// nil, and Hash. Seq and At must already be set. The body must be a
// document Canonicalize accepts; it is kept byte for byte, whitespace and
// newlines included (see the package documentation for how JSONL carries
// it).
func (s *Sealer) Seal(prev string, e *custody.Entry) error {
	return s.seal(prev, e)
}

func (s *Sealer) seal(prev string, e *custody.Entry) error {
	if prev == "" {
		prev = genesisPrev
	}
	if e.Refs == nil {
		e.Refs = map[string]string{}
	}
	e.BodySHA256 = bodySHA256(e.Body)
	e.Prev = prev
	var prevBytes []byte
	if prev == s.lastHex {
		prevBytes = s.last[:]
	}
	sum, err := s.h.entryHash(e, prevBytes)
	if err != nil {
		return fmt.Errorf("seal entry %d: %w", e.Seq, err)
	}
	e.Hash = hex.EncodeToString(sum[:])
	s.lastHex, s.last = e.Hash, sum
	return nil
}

// Prepared is an entry readied for sealing by Canonicalizer.Prepare: its
// canonical form, body hashed and canonicalized, with gaps where prev and
// seq go, which only the writer putting it on the chain knows. Entries
// prepared by their callers in parallel leave one writer only the chain's
// own SHA-256 to compute. The zero value is ready for Prepare and keeps
// its buffer from one entry to the next.
type Prepared struct {
	buf           []byte // the canonical entry without prev's digits and seq
	prevAt, seqAt int    // where prev's digits and seq go in buf
	bodySHA256    string
}

// Prepare readies e, whose At, Kind, Trace, Actor, Refs and Body are
// final, for Sealer.SealPrepared into p. It refuses what Sealer.Seal
// refuses of such an entry: a body Canonicalize refuses, or a field that
// is not valid UTF-8, with an error naming it.
func (z *Canonicalizer) Prepare(p *Prepared, e *custody.Entry) error {
	sum := sha256.Sum256(e.Body)
	p.bodySHA256 = hex.EncodeToString(sum[:])
	w := entryWriter{dst: p.buf[:0]}
	if err := w.head(&z.c, e, p.bodySHA256); err != nil {
		return err
	}
	w.dst = append(w.dst, `,"prev":"`...)
	p.prevAt = len(w.dst)
	w.dst = append(w.dst, `","refs":`...)
	w.refs(e.Refs)
	w.dst = append(w.dst, `,"seq":`...)
	p.seqAt = len(w.dst)
	w.field(`,"trace":`, e.Trace, "trace")
	p.buf = append(w.dst, '}')
	if w.bad != "" {
		return fmt.Errorf("%s is not valid UTF-8", w.bad)
	}
	return nil
}

// SealPrepared is Sealer.Seal for an entry p was prepared from, as it
// stood then but for Seq: it puts e on the chain after prev, hashing p's
// canonical form with prev and e.Seq filled in. A prev that is the hash
// this Sealer computed last needs no decoding.
func (s *Sealer) SealPrepared(prev string, e *custody.Entry, p *Prepared) error {
	if prev == "" {
		prev = genesisPrev
	}
	var prevBytes [32]byte
	switch {
	case prev == s.lastHex:
		prevBytes = s.last
	case isHashHex(prev):
		appendHexBytes(prevBytes[:0], prev)
	default:
		return fmt.Errorf("seal entry %d: prev %q is not 64 lowercase hex digits", e.Seq, prev)
	}
	buf := s.h.buf[:0]
	if need := 32 + len(p.buf) + len(prev) + 20; cap(buf) < need {
		buf = make([]byte, 0, 2*need)
	}
	buf = append(buf, prevBytes[:]...)
	buf = append(buf, p.buf[:p.prevAt]...)
	buf = append(buf, prev...)
	buf = append(buf, p.buf[p.prevAt:p.seqAt]...)
	buf = strconv.AppendInt(buf, e.Seq, 10)
	buf = append(buf, p.buf[p.seqAt:]...)
	s.h.buf = buf
	sum := sha256.Sum256(buf)
	if e.Refs == nil {
		e.Refs = map[string]string{}
	}
	e.Prev, e.BodySHA256 = prev, p.bodySHA256
	e.Hash = hex.EncodeToString(sum[:])
	s.lastHex, s.last = e.Hash, sum
	return nil
}
