package tlog

import (
	"bytes"
	"crypto/ed25519"
	"fmt"

	"golang.org/x/mod/sumdb/note"
)

// NoteError says which checkpoint note failed verification and why.
type NoteError struct {
	Size   uint64
	Reason string
}

func (e *NoteError) Error() string {
	return fmt.Sprintf("checkpoint %d: %s", e.Size, e.Reason)
}

// NoteChecker verifies a ledger's checkpoint notes against its entries, fed
// in ledger order: every entry's hash (Entry), and each note right after
// the entry it covers (Note). A note must be signed by the ledger's key,
// name the same origin as every other, and state the root and chain head
// recomputed from the entries; with witnesses, it must also carry valid
// cosignatures by at least Quorum of them.
type NoteChecker struct {
	keys      []ed25519.PublicKey
	origin    string
	witnesses []note.Verifier
	quorum    int
	tree      *Tree
	head      string
	notes     int
	covered   uint64 // the size of the last note checked
}

// NewNoteChecker returns a checker of notes each signed by one of keys,
// the ledger's keys over its life (none: any signature is accepted
// unchecked, roots still are), that requires quorum of witnesses to have
// cosigned each note.
func NewNoteChecker(keys []ed25519.PublicKey, witnesses []note.Verifier, quorum int) *NoteChecker {
	return &NoteChecker{keys: keys, witnesses: witnesses, quorum: quorum, tree: NewTree()}
}

// Entry appends the entry whose chain hash is hexHash.
func (c *NoteChecker) Entry(hexHash string) error {
	leaf, err := EntryLeafHash(hexHash)
	if err != nil {
		return &NoteError{Size: c.tree.Size() + 1, Reason: err.Error()}
	}
	c.head = hexHash
	return c.tree.Append(leaf, nil)
}

// Note checks the cosigned note msg against the entries so far.
func (c *NoteChecker) Note(msg []byte) error {
	cp, text, sigs, err := c.open(msg)
	if err != nil {
		return err
	}
	size := c.tree.Size()
	fail := func(format string, args ...any) error {
		return &NoteError{Size: cp.Size, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case c.origin != "" && cp.Origin != c.origin:
		return fail("names origin %q, the ledger's notes before it %q", cp.Origin, c.origin)
	case cp.Size != size:
		return fail("comes after entry %d", size)
	case !bytes.Equal(cp.Root, c.tree.Root()):
		return fail("root hash %x is not the tree's over the entries, %x", cp.Root, c.tree.Root())
	case cp.Head != c.head:
		return fail("chain head %s is not entry %d's hash %s", cp.Head, size, c.head)
	}
	c.origin = cp.Origin
	c.notes++
	c.covered = cp.Size
	if len(c.witnesses) == 0 {
		return nil
	}
	if got := Cosigners(text, sigs, c.witnesses); len(got) < c.quorum {
		return fail("lacks a consistent cosignature: %d of the %d witnesses cosigned it (%v), %d required", len(got), len(c.witnesses), got, c.quorum)
	}
	return nil
}

// open verifies the ledger's signature on msg, when the checker has a key,
// and returns the checkpoint, the note's text and its signature lines.
func (c *NoteChecker) open(msg []byte) (Checkpoint, []byte, []SigLine, error) {
	text, sigBytes, err := SplitNote(msg)
	if err != nil {
		return Checkpoint{}, nil, nil, &NoteError{Size: c.tree.Size(), Reason: err.Error()}
	}
	cp, err := ParseText(text)
	if err != nil {
		return Checkpoint{}, nil, nil, &NoteError{Size: c.tree.Size(), Reason: err.Error()}
	}
	sigs, err := ParseSigLines(sigBytes)
	if err != nil {
		return cp, nil, nil, &NoteError{Size: cp.Size, Reason: err.Error()}
	}
	if len(c.keys) > 0 && !c.signedByLedger(cp.Origin, text, sigs) {
		return cp, nil, nil, &NoteError{Size: cp.Size, Reason: "not signed by the ledger's key"}
	}
	return cp, text, sigs, nil
}

// signedByLedger reports whether one of the ledger's keys signed text.
func (c *NoteChecker) signedByLedger(origin string, text []byte, sigs []SigLine) bool {
	for _, k := range c.keys {
		v, err := NewVerifier(origin, k)
		if err != nil {
			continue
		}
		if _, ok := CosignatureFor(text, sigs, v); ok {
			return true
		}
	}
	return false
}

// Notes returns how many notes were checked.
func (c *NoteChecker) Notes() int { return c.notes }

// Finish checks, when witnesses are required, that the last note covers
// the last entry: entries after the last witnessed checkpoint are
// vouched for by the ledger's key alone, which is what witnesses guard
// against.
func (c *NoteChecker) Finish() error {
	if len(c.witnesses) == 0 || c.tree.Size() == c.covered {
		return nil
	}
	if c.notes == 0 {
		return &NoteError{Size: c.tree.Size(), Reason: "no checkpoint note carries the witnesses' cosignatures"}
	}
	return &NoteError{Size: c.tree.Size(), Reason: fmt.Sprintf("entries %d-%d are in no checkpoint the witnesses cosigned", c.covered+1, c.tree.Size())}
}
