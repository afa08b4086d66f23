package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/custody-dev/custody"
)

// ZeroHash is the prev of the first entry: 32 zero bytes, hex encoded.
var zeroHash [32]byte

// GenesisPrev returns the hex prev of the first entry.
func GenesisPrev() string { return hex.EncodeToString(zeroHash[:]) }

// Seal completes e as the entry following prev (hex; "" means genesis):
// it sets Prev, BodySHA256 (of the exact body bytes), an empty Refs when
// nil, and Hash. Seq and At must already be set. The body must be a
// document Canonicalize accepts.
func Seal(prev string, e *custody.Entry) error {
	if prev == "" {
		prev = GenesisPrev()
	}
	if e.Refs == nil {
		e.Refs = map[string]string{}
	}
	sum := sha256.Sum256(e.Body)
	e.BodySHA256 = hex.EncodeToString(sum[:])
	e.Prev = prev
	h, err := EntryHash(e)
	if err != nil {
		return err
	}
	e.Hash = h
	return nil
}

// EntryHash computes hash = SHA-256(prev_hash_bytes ‖ JCS(entry without
// "hash")) for e as it stands, hex encoded.
func EntryHash(e *custody.Entry) (string, error) {
	var buf [64]byte
	prev, err := decodeHash(e.Prev, buf[:32])
	if err != nil {
		return "", fmt.Errorf("prev: %w", err)
	}
	canon, err := AppendEntryCanonical(make([]byte, 0, 256+len(e.Body)), e)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(prev)
	h.Write(canon)
	return hex.EncodeToString(h.Sum(buf[32:32])), nil
}

// AppendEntryCanonical appends JCS(e without "hash") to dst. The members are
// written in RFC 8785 order directly, so only the body needs parsing.
func AppendEntryCanonical(dst []byte, e *custody.Entry) ([]byte, error) {
	for _, f := range [...]struct{ name, v string }{
		{"actor", e.Actor}, {"at", e.At}, {"body_sha256", e.BodySHA256},
		{"kind", e.Kind}, {"prev", e.Prev}, {"trace", e.Trace},
	} {
		if !utf8.ValidString(f.v) {
			return dst, fmt.Errorf("%s is not valid UTF-8", f.name)
		}
	}
	dst = append(dst, `{"actor":`...)
	dst = appendString(dst, []byte(e.Actor))
	dst = append(dst, `,"at":`...)
	dst = appendString(dst, []byte(e.At))
	dst = append(dst, `,"body":`...)
	var err error
	if dst, err = AppendCanonical(dst, e.Body); err != nil {
		return dst, fmt.Errorf("body %w", err)
	}
	dst = append(dst, `,"body_sha256":`...)
	dst = appendString(dst, []byte(e.BodySHA256))
	dst = append(dst, `,"kind":`...)
	dst = appendString(dst, []byte(e.Kind))
	dst = append(dst, `,"prev":`...)
	dst = appendString(dst, []byte(e.Prev))
	dst = append(dst, `,"refs":`...)
	if dst, err = appendRefs(dst, e.Refs); err != nil {
		return dst, err
	}
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, e.Seq, 10)
	dst = append(dst, `,"trace":`...)
	dst = appendString(dst, []byte(e.Trace))
	return append(dst, '}'), nil
}

func appendRefs(dst []byte, refs map[string]string) ([]byte, error) {
	keys := make([][]byte, 0, len(refs))
	for k, v := range refs {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return dst, fmt.Errorf("ref %q is not valid UTF-8", k)
		}
		keys = append(keys, []byte(k))
	}
	slices.SortFunc(keys, compareUTF16)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, k)
		dst = append(dst, ':')
		dst = appendString(dst, []byte(refs[string(k)]))
	}
	return append(dst, '}'), nil
}

func decodeHash(s string, dst []byte) ([]byte, error) {
	if len(s) != 64 {
		return nil, fmt.Errorf("hash %q is not 64 hex digits", s)
	}
	if _, err := hex.Decode(dst[:32], []byte(s)); err != nil {
		return nil, fmt.Errorf("hash %q: %w", s, err)
	}
	return dst[:32], nil
}

// ActionDigest returns hex SHA-256 of JCS({"tool":tool,"arguments":args}):
// the digest an approval is bound to.
func ActionDigest(tool string, args []byte) (string, error) {
	if !utf8.ValidString(tool) {
		return "", fmt.Errorf("tool name is not valid UTF-8")
	}
	dst := append(make([]byte, 0, 64+len(args)), `{"arguments":`...)
	dst, err := AppendCanonical(dst, args)
	if err != nil {
		return "", fmt.Errorf("arguments %w", err)
	}
	dst = append(dst, `,"tool":`...)
	dst = appendString(dst, []byte(tool))
	dst = append(dst, '}')
	sum := sha256.Sum256(dst)
	return hex.EncodeToString(sum[:]), nil
}
