package ledger

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime"
	"strconv"
	"sync"

	"github.com/custody-dev/custody"
)

// VerifyError names the first entry at which a ledger fails verification
// and why.
type VerifyError struct {
	Seq    int64
	Reason string
}

// Error returns "seq N: reason".
func (e *VerifyError) Error() string { return "seq " + strconv.FormatInt(e.Seq, 10) + ": " + e.Reason }

// Report summarises a ledger that verified.
type Report struct {
	Entries int64
	// Head is the hash of the last entry; empty when there are none.
	Head        string
	Checkpoints int
	// Covered is the largest size named by a checkpoint: entries after it
	// are as trustworthy as the copy they were read from, since appending
	// to a chain needs no key.
	Covered int64
	// Signed says whether checkpoint signatures were checked against a
	// public key.
	Signed bool
}

// String returns a one-line summary such as
// "ok: 1234 entries, head 3f2a9c1e…, 2 signed checkpoints".
func (r Report) String() string {
	s := fmt.Sprintf("ok: %d entries", r.Entries)
	if r.Head != "" {
		s += ", head " + r.Head[:min(len(r.Head), 12)] + "…"
	}
	switch {
	case r.Checkpoints == 0:
		return s + ", no checkpoints (a cut-off tail would go unnoticed)"
	case r.Signed:
		s += fmt.Sprintf(", %d signed %s", r.Checkpoints, plural(r.Checkpoints, "checkpoint"))
	default:
		s += fmt.Sprintf(", %d %s (signatures not checked: no public key)", r.Checkpoints, plural(r.Checkpoints, "checkpoint"))
	}
	if r.Covered < r.Entries {
		s += fmt.Sprintf("; seq %d on not yet checkpointed", r.Covered+1)
	}
	return s
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// Verifier checks a ledger entry by entry, in seq order, against its
// checkpoints. It keeps 32 bytes for every entry seen, so that a
// checkpoint given after its entry can still be checked; checkpoints given
// before their entry cost nothing until it arrives. The first failure is
// returned by that call and by every later one, Finish included. A
// Verifier is not safe for concurrent use.
type Verifier struct {
	pub ed25519.PublicKey
	h   hasher
	// seen is the number of entries verified, and last the hex hash of the
	// last one (genesisPrev before the first).
	seen int64
	last [64]byte
	// hashes holds the hash of every entry seen, in chunks so a long ledger
	// never copies them to grow.
	hashes [][]byte
	// pending maps the sizes of checkpoints given before their entry to
	// their heads.
	pending     map[int64]string
	checkpoints int
	covered     int64
	err         *VerifyError
}

// hashChunk is how many hashes one chunk of Verifier.hashes holds.
const hashChunk = 1 << 14

// NewVerifier returns a Verifier for checkpoints signed by pub. With a nil
// pub, checkpoints are only checked against the entries, and the Report
// says their signatures were not checked.
func NewVerifier(pub ed25519.PublicKey) *Verifier {
	v := &Verifier{pub: pub, pending: map[int64]string{}}
	copy(v.last[:], genesisPrev)
	return v
}

// Entry verifies the next entry: its seq must follow the previous one
// (starting at 1), its prev must be the previous entry's hash (64 zeros
// for the first), body_sha256 must be the SHA-256 of the exact body bytes,
// and hash must be its EntryHash. Any checkpoint already given for its seq
// must name its hash. A failure is a *VerifyError.
func (v *Verifier) Entry(e *custody.Entry) error {
	if v.err != nil {
		return v.err
	}
	if err := v.entry(e); err != nil {
		v.err = err
		return err
	}
	return nil
}

func (v *Verifier) entry(e *custody.Entry) *VerifyError {
	return v.link(e, v.h.examine(e))
}

// Entries verifies es, the entries that follow in seq order, exactly as
// calling Entry on each would; what needs no predecessor (the body digest
// and the entry hash) is computed on every CPU at once.
func (v *Verifier) Entries(es []custody.Entry) error {
	if v.err != nil {
		return v.err
	}
	xs := make([]examined, len(es))
	workers := min(runtime.GOMAXPROCS(0), len(es)/minPerWorker+1)
	per := (len(es) + workers - 1) / max(workers, 1)
	var wg sync.WaitGroup
	for lo := 0; lo < len(es); lo += per {
		hi := min(lo+per, len(es))
		wg.Go(func() {
			var h hasher
			for i := lo; i < hi; i++ {
				xs[i] = h.examine(&es[i])
			}
		})
	}
	wg.Wait()
	for i := range es {
		if err := v.link(&es[i], xs[i]); err != nil {
			v.err = err
			return err
		}
	}
	return nil
}

// minPerWorker keeps small batches on one goroutine.
const minPerWorker = 64

// examined is what can be checked of an entry without its predecessor.
type examined struct {
	hash   [32]byte
	hex    [64]byte
	reason string // why the entry fails, "" when it holds
}

// examine checks an entry's body digest and hash, taking its prev as
// given: link checks prev against the chain.
func (h *hasher) examine(e *custody.Entry) examined {
	var x examined
	body := sha256.Sum256(e.Body)
	hex.Encode(x.hex[:], body[:])
	if e.BodySHA256 != string(x.hex[:]) {
		x.reason = "body_sha256 does not match the body bytes"
		return x
	}
	hash, err := h.entryHash(e, nil)
	if err != nil {
		x.reason = "cannot hash the entry: " + err.Error()
		return x
	}
	hex.Encode(x.hex[:], hash[:])
	if e.Hash != string(x.hex[:]) {
		x.reason = "hash does not match the entry's contents"
		return x
	}
	x.hash = hash
	return x
}

// link checks an examined entry against the chain so far (seq and prev,
// in that order, before what examine found) and, when it holds, adds it.
func (v *Verifier) link(e *custody.Entry, x examined) *VerifyError {
	want := v.seen + 1
	switch {
	case e.Seq > want:
		return &VerifyError{Seq: want, Reason: fmt.Sprintf("missing: the next entry has seq %d", e.Seq)}
	case e.Seq < want:
		return &VerifyError{Seq: want, Reason: fmt.Sprintf("out of order: the next entry has seq %d", e.Seq)}
	}
	if e.Prev != string(v.last[:]) {
		if want == 1 {
			return &VerifyError{Seq: want, Reason: "prev is not the genesis value (64 zeros)"}
		}
		return &VerifyError{Seq: want, Reason: fmt.Sprintf("prev does not match the hash of seq %d", want-1)}
	}
	if x.reason != "" {
		return &VerifyError{Seq: want, Reason: x.reason}
	}
	v.seen, v.last = want, x.hex
	v.keep(x.hash)
	return v.settle(want)
}

// hashBytes returns the hash of the entry at seq, which has been seen.
func (v *Verifier) hashBytes(seq int64) []byte {
	i := seq - 1
	chunk := v.hashes[i/hashChunk]
	off := 32 * (i % hashChunk)
	return chunk[off : off+32]
}

// keep records the hash of the entry just verified. Every chunk holds
// hashChunk hashes once full; the first grows as needed, so verifying a
// short ledger costs little.
func (v *Verifier) keep(hash [32]byte) {
	n := len(v.hashes)
	if n == 0 || len(v.hashes[n-1]) == 32*hashChunk {
		size := 32 * hashChunk
		if n == 0 {
			size = 32 * 64
		}
		v.hashes = append(v.hashes, make([]byte, 0, size))
		n++
	}
	v.hashes[n-1] = append(v.hashes[n-1], hash[:]...)
}

// settle checks a checkpoint given before the entry at seq arrived.
func (v *Verifier) settle(seq int64) *VerifyError {
	head, ok := v.pending[seq]
	if !ok {
		return nil
	}
	delete(v.pending, seq)
	if head != string(v.last[:]) {
		return headMismatch(seq)
	}
	return nil
}

func headMismatch(size int64) *VerifyError {
	return &VerifyError{Seq: size, Reason: fmt.Sprintf("hash does not match the head of the checkpoint at size %d", size)}
}

// Checkpoint checks a signed checkpoint: its signature (when the Verifier
// has a public key) and, once the entry at cp.Size has been seen, that
// entry's hash against cp.Head. A checkpoint may be given before or after
// its entry. A failure is a *VerifyError naming seq cp.Size.
func (v *Verifier) Checkpoint(cp custody.Checkpoint) error {
	if v.err != nil {
		return v.err
	}
	if err := v.checkpoint(cp); err != nil {
		v.err = err
		return err
	}
	v.checkpoints++
	v.covered = max(v.covered, cp.Size)
	return nil
}

func (v *Verifier) checkpoint(cp custody.Checkpoint) *VerifyError {
	var err error
	if v.pub != nil {
		err = verifyCheckpoint(v.pub, cp)
	} else {
		err = checkCheckpointForm(cp)
	}
	if err != nil {
		return &VerifyError{Seq: cp.Size, Reason: fmt.Sprintf("checkpoint at size %d: %v", cp.Size, err)}
	}
	switch {
	case cp.Size == 0:
		if cp.Head != genesisPrev {
			return &VerifyError{Seq: 0, Reason: "checkpoint at size 0 does not name the genesis value (64 zeros)"}
		}
	case cp.Size <= v.seen:
		if cp.Head != hex.EncodeToString(v.hashBytes(cp.Size)) {
			return headMismatch(cp.Size)
		}
	default:
		if head, ok := v.pending[cp.Size]; ok && head != cp.Head {
			return &VerifyError{Seq: cp.Size, Reason: fmt.Sprintf("two checkpoints at size %d name different heads", cp.Size)}
		}
		v.pending[cp.Size] = cp.Head
	}
	return nil
}

// Finish ends verification. It fails when an earlier call failed, or when
// a checkpoint covers more entries than were given: the tail of the
// ledger was cut off.
func (v *Verifier) Finish() (Report, error) {
	if v.err != nil {
		return Report{}, v.err
	}
	if len(v.pending) > 0 {
		size := int64(-1)
		for s := range v.pending {
			if size < 0 || s < size {
				size = s
			}
		}
		v.err = &VerifyError{Seq: v.seen + 1, Reason: fmt.Sprintf(
			"missing: a checkpoint covers %d entries but the ledger ends at seq %d (the tail was cut off)", size, v.seen)}
		return Report{}, v.err
	}
	r := Report{Entries: v.seen, Checkpoints: v.checkpoints, Covered: v.covered, Signed: v.pub != nil}
	if v.seen > 0 {
		r.Head = string(v.last[:])
	}
	return r, nil
}
