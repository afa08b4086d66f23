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
	// Ledger is the ledger id the checkpoints name; empty when none does.
	Ledger string
	// Rotations counts the key rotations on the ledger.
	Rotations int
}

// Unsealed returns how many entries at the end of the ledger no
// checkpoint covers.
func (r Report) Unsealed() int64 { return r.Entries - r.Covered }

// Strict returns a *VerifyError unless a checkpoint covers the last
// entry: entries after the last checkpoint are as trustworthy as the copy
// they were read from, since appending to a chain, or cutting it and
// rewriting it consistently, needs no key.
func (r Report) Strict() error {
	if r.Unsealed() <= 0 {
		return nil
	}
	if r.Checkpoints == 0 {
		return &VerifyError{Seq: r.Covered + 1, Reason: fmt.Sprintf(
			"no checkpoint covers any of the %d entries (a ledger rewritten or cut without its checkpoints looks like this)", r.Entries)}
	}
	which := fmt.Sprintf("the last entry (seq %d) is", r.Entries)
	if n := r.Unsealed(); n > 1 {
		which = fmt.Sprintf("the last %d entries (seq %d to %d) are", n, r.Covered+1, r.Entries)
	}
	return &VerifyError{Seq: r.Covered + 1, Reason: which +
		" not covered by a checkpoint (a tail cut off with its checkpoint, or appended without the key, looks like this)"}
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
// checkpoints. By default it keeps 32 bytes for every entry seen, so that
// a checkpoint given long after its entry can still be checked; a
// Verifier from NewStreamVerifier keeps none. Checkpoints given before
// their entry are held until it arrives. The first failure is returned by
// that call and by every later one, Finish included. A Verifier is not
// safe for concurrent use.
//
// # Keys and rotation
//
// A checkpoint must be signed by the key in force at its size. Before the
// ledger's first key rotation that is the trusted key that signed its
// first checkpoint; a KeyRotatedKind entry at seq R names the key in force
// as "old" and makes "new" the key in force for every checkpoint of size
// R or more. Every key in force must be trusted (given to the Verifier):
// the ledger's word alone never makes a key trusted, since anyone who can
// append to the chain can append a rotation.
type Verifier struct {
	// trusted are the keys checkpoints may be signed with; none means
	// signatures are not checked.
	trusted []ed25519.PublicKey
	// eras are the keys in force, by the seq from which each is.
	eras []era
	h    hasher
	// seen is the number of entries verified, and last the hex hash of the
	// last one (genesisPrev before the first).
	seen int64
	last [64]byte
	// stream says that no hashes are kept: a checkpoint must come before
	// its entry or right after it.
	stream bool
	// hashes holds the hash of every entry seen, in chunks so a long ledger
	// never copies them to grow.
	hashes [][]byte
	// pending holds the checkpoints given before their entry, by size.
	pending     map[int64]custody.Checkpoint
	ledgerID    string
	checkpoints int
	covered     int64
	err         *VerifyError
}

// era is the key in force from seq on; a nil key is not known yet.
type era struct {
	from int64
	key  ed25519.PublicKey
}

// hashChunk is how many hashes one chunk of Verifier.hashes holds.
const hashChunk = 1 << 14

// NewVerifier returns a Verifier for checkpoints signed by pub. With a nil
// pub, checkpoints are only checked against the entries, and the Report
// says their signatures were not checked.
func NewVerifier(pub ed25519.PublicKey) *Verifier {
	var keys []ed25519.PublicKey
	if pub != nil {
		keys = append(keys, pub)
	}
	return NewKeysVerifier(keys...)
}

// NewKeysVerifier returns a Verifier that trusts every key in keys, as a
// ledger whose key was rotated needs: each checkpoint must still be signed
// by the key in force at its size. With no keys, signatures are not
// checked.
func NewKeysVerifier(keys ...ed25519.PublicKey) *Verifier {
	v := &Verifier{trusted: keys, eras: []era{{}}, pending: map[int64]custody.Checkpoint{}}
	copy(v.last[:], genesisPrev)
	return v
}

// NewStreamVerifier is NewKeysVerifier for a ledger read in order, with
// every checkpoint given before its entry or right after it: it keeps no
// hashes, so its memory does not grow with the ledger. A checkpoint given
// later than right after its entry is refused.
func NewStreamVerifier(keys ...ed25519.PublicKey) *Verifier {
	v := NewKeysVerifier(keys...)
	v.stream = true
	return v
}

// Entries verifies es, the entries that follow in seq order. Each entry's
// seq must follow the previous one (starting at 1), its prev must be the
// previous entry's hash (64 zeros for the first), body_sha256 must be the
// SHA-256 of the exact body bytes, and hash must be SHA-256(prev_hash_bytes
// ‖ JCS(entry without "hash")). Any checkpoint already given for an
// entry's seq must name its hash. A failure is a *VerifyError naming the
// first entry at fault. What needs no predecessor (the body digest and
// the entry hash) is computed on every CPU at once.
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
	if !v.stream {
		v.keep(x.hash)
	}
	if e.Kind == KeyRotatedKind {
		if err := v.rotate(e); err != nil {
			return err
		}
	}
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
	cp, ok := v.pending[seq]
	if !ok {
		return nil
	}
	delete(v.pending, seq)
	if err := v.signedInForce(cp); err != nil {
		return err
	}
	if cp.Head != string(v.last[:]) {
		return headMismatch(seq)
	}
	return nil
}

func headMismatch(size int64) *VerifyError {
	return &VerifyError{Seq: size, Reason: fmt.Sprintf("hash does not match the head of the checkpoint at size %d", size)}
}

// Checkpoint checks a signed checkpoint: its form, that it names the same
// ledger as the others, and, once the entry at cp.Size has been seen, that
// entry's hash against cp.Head and the signature against the key in force
// at that size (when the Verifier has keys). A checkpoint may be given
// before or after its entry. A failure is a *VerifyError naming seq
// cp.Size.
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
	if err := checkCheckpointForm(cp); err != nil {
		return &VerifyError{Seq: cp.Size, Reason: fmt.Sprintf("checkpoint at size %d: %v", cp.Size, err)}
	}
	if err := v.sameLedger(cp); err != nil {
		return err
	}
	if cp.Size <= v.seen {
		if err := v.signedInForce(cp); err != nil {
			return err
		}
	}
	switch {
	case cp.Size == 0:
		if cp.Head != genesisPrev {
			return &VerifyError{Seq: 0, Reason: "checkpoint at size 0 does not name the genesis value (64 zeros)"}
		}
	case cp.Size == v.seen:
		if cp.Head != string(v.last[:]) {
			return headMismatch(cp.Size)
		}
	case cp.Size < v.seen && v.stream:
		return &VerifyError{Seq: cp.Size, Reason: fmt.Sprintf(
			"checkpoint at size %d comes after seq %d: a checkpoint must follow the entry it covers", cp.Size, v.seen)}
	case cp.Size < v.seen:
		if cp.Head != hex.EncodeToString(v.hashBytes(cp.Size)) {
			return headMismatch(cp.Size)
		}
	default:
		if p, ok := v.pending[cp.Size]; ok && p.Head != cp.Head {
			return &VerifyError{Seq: cp.Size, Reason: fmt.Sprintf("two checkpoints at size %d name different heads", cp.Size)}
		}
		v.pending[cp.Size] = cp
	}
	return nil
}

// sameLedger refuses a checkpoint naming another ledger than the
// checkpoints before it.
func (v *Verifier) sameLedger(cp custody.Checkpoint) *VerifyError {
	switch {
	case cp.Ledger == "":
	case v.ledgerID == "":
		v.ledgerID = cp.Ledger
	case cp.Ledger != v.ledgerID:
		return &VerifyError{Seq: cp.Size, Reason: fmt.Sprintf(
			"checkpoint at size %d is of ledger %s, the checkpoints before it of ledger %s", cp.Size, cp.Ledger, v.ledgerID)}
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
	r := Report{Entries: v.seen, Checkpoints: v.checkpoints, Covered: v.covered, Signed: len(v.trusted) > 0,
		Ledger: v.ledgerID, Rotations: len(v.eras) - 1}
	if v.seen > 0 {
		r.Head = string(v.last[:])
	}
	return r, nil
}

// Resume makes v go on from a chain whose entry at seq has the hex hash
// head, as if it had verified the entries up to it: the next entry must
// have seq+1 and prev head. A store checks the entries since its last
// checkpoint this way. It must be called before any entry is given.
func (v *Verifier) Resume(seq int64, head string) error {
	if v.seen != 0 || len(v.hashes) != 0 || seq < 0 || !isHashHex(head) {
		return fmt.Errorf("resume at seq %d: only a fresh verifier resumes, at a seq of 0 or more and a hex hash", seq)
	}
	if !v.stream && seq > 0 {
		return fmt.Errorf("resume at seq %d: only a stream verifier resumes", seq)
	}
	v.seen = seq
	copy(v.last[:], head)
	return nil
}
