package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/custody-dev/custody"
)

// genesisPrev is the prev of the first entry: 32 zero bytes in hex.
const genesisPrev = "0000000000000000000000000000000000000000000000000000000000000000"

// GenesisPrev returns the hex prev of the first entry: 64 zeros.
func GenesisPrev() string { return genesisPrev }

func bodySHA256(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// hasher computes entry hashes, keeping its buffers between entries.
type hasher struct {
	c   canon
	buf []byte
}

// entryHash computes hash = SHA-256(prev_hash_bytes ‖ JCS(entry without
// "hash")) for e as it stands. prev holds the bytes e.Prev spells
// when the caller knows them already, or is nil.
func (h *hasher) entryHash(e *custody.Entry, prev []byte) ([32]byte, error) {
	if prev == nil && !isHashHex(e.Prev) {
		return [32]byte{}, fmt.Errorf("prev %q is not 64 lowercase hex digits", e.Prev)
	}
	// Hash prev's bytes and the canonical entry as one buffer: one call
	// into SHA-256, no hash.Hash to allocate.
	buf := h.buf[:0]
	if cap(buf) < 32+256+len(e.Body) {
		buf = make([]byte, 0, 2*(32+256+len(e.Body)))
	}
	if prev != nil {
		buf = append(buf, prev...)
	} else {
		buf = appendHexBytes(buf, e.Prev)
	}
	buf, err := h.appendEntry(buf, e)
	h.buf = buf
	if err != nil {
		return [32]byte{}, err
	}
	return sha256.Sum256(buf), nil
}

// appendHexBytes appends the bytes spelt by s, which isHashHex accepts.
func appendHexBytes(dst []byte, s string) []byte {
	for i := 0; i+1 < len(s); i += 2 {
		dst = append(dst, unhex(s[i])<<4|unhex(s[i+1]))
	}
	return dst
}

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}

// appendEntry appends JCS(e without "hash") to dst. The members are
// written in RFC 8785 order directly, so only the body needs parsing.
func (h *hasher) appendEntry(dst []byte, e *custody.Entry) ([]byte, error) {
	mark := len(dst)
	w := entryWriter{dst: dst}
	if err := w.head(&h.c, e, e.BodySHA256); err != nil {
		return dst[:mark], err
	}
	w.field(`,"prev":`, e.Prev, "prev")
	w.dst = append(w.dst, `,"refs":`...)
	w.refs(e.Refs)
	w.dst = append(w.dst, `,"seq":`...)
	w.dst = strconv.AppendInt(w.dst, e.Seq, 10)
	w.field(`,"trace":`, e.Trace, "trace")
	if w.bad != "" {
		return dst[:mark], fmt.Errorf("%s is not valid UTF-8", w.bad)
	}
	return append(w.dst, '}'), nil
}

// entryWriter appends the members of a canonical entry, noting the first
// field that JSON cannot carry unchanged.
type entryWriter struct {
	dst []byte
	bad string // the name of the first field that is not valid UTF-8
}

// head appends the members of a canonical entry that come before "prev":
// actor, at, body (canonicalized with c), body_sha256 and kind.
func (w *entryWriter) head(c *canon, e *custody.Entry, bodySHA256 string) error {
	w.field(`{"actor":`, e.Actor, "actor")
	w.field(`,"at":`, e.At, "at")
	w.dst = append(w.dst, `,"body":`...)
	var err error
	if w.dst, err = c.appendDoc(w.dst, e.Body); err != nil {
		return fmt.Errorf("body %w", err)
	}
	w.field(`,"body_sha256":`, bodySHA256, "body_sha256")
	w.field(`,"kind":`, e.Kind, "kind")
	return nil
}

// field appends sep and v as a string literal.
func (w *entryWriter) field(sep, v, name string) {
	w.dst = append(w.dst, sep...)
	var ok bool
	if w.dst, ok = appendValidString(w.dst, v); !ok && w.bad == "" {
		w.bad = name
	}
}

// refs appends refs as a canonical JSON object.
func (w *entryWriter) refs(refs map[string]string) {
	var stack [8]ref
	sorted := stack[:0]
	for k, v := range refs {
		sorted = append(sorted, ref{k, v})
	}
	slices.SortFunc(sorted, func(a, b ref) int { return compareUTF16(a.k, b.k) })
	sep := "{"
	for _, r := range sorted {
		w.field(sep, r.k, "refs")
		w.field(":", r.v, "refs")
		sep = ","
	}
	if len(sorted) == 0 {
		w.dst = append(w.dst, '{')
	}
	w.dst = append(w.dst, '}')
}

// ref is one member of an entry's refs.
type ref struct{ k, v string }

// appendSortedRefs appends refs, in order, as a JSON object.
func appendSortedRefs(dst []byte, refs []ref) []byte {
	dst = append(dst, '{')
	for i, r := range refs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, r.k)
		dst = append(dst, ':')
		dst = appendString(dst, r.v)
	}
	return append(dst, '}')
}

// ActionDigest returns hex SHA-256 of JCS({"tool":tool,"arguments":args}):
// the digest an approval is bound to.
func ActionDigest(tool string, args []byte) (string, error) {
	if !utf8.ValidString(tool) {
		return "", errors.New("action digest: tool name is not valid UTF-8")
	}
	dst := append(make([]byte, 0, 64+len(args)), `{"arguments":`...)
	dst, err := AppendCanonical(dst, args)
	if err != nil {
		return "", fmt.Errorf("action digest: arguments %w", err)
	}
	dst = append(dst, `,"tool":`...)
	dst = appendString(dst, tool)
	dst = append(dst, '}')
	sum := sha256.Sum256(dst)
	return hex.EncodeToString(sum[:]), nil
}
