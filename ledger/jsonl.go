package ledger

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"io"
	"slices"
	"strconv"

	"github.com/custody-dev/custody"
)

// AppendEntryLine appends e as one JSONL line, '\n' included:
//
//	{"seq":1,"at":"…","kind":"…","trace":"…","actor":"…","refs":{…},"body":{…},"body_sha256":"…","prev":"…","hash":"…"}
//
// The body is written as its exact bytes when they fit on the line
// unchanged: a document Canonicalize accepts, with no '\n' or '\r' and no
// whitespace before or after it. Any other body, a pretty-printed one say,
// is written instead as "body_raw": a JSON string holding the exact bytes.
// Either way a Decoder returns the body byte for byte. The string fields
// of e must be valid UTF-8, as they are in any sealed entry.
func AppendEntryLine(dst []byte, e *custody.Entry) []byte {
	// Room for the line and for bodyInline's scratch, so that a caller
	// reusing dst stops allocating.
	dst = slices.Grow(dst, 2*len(e.Body)+512)
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendInt(dst, e.Seq, 10)
	dst = appendField(dst, "at", e.At)
	dst = appendField(dst, "kind", e.Kind)
	dst = appendField(dst, "trace", e.Trace)
	dst = appendField(dst, "actor", e.Actor)
	dst = append(dst, `,"refs":`...)
	dst = appendLineRefs(dst, e.Refs)
	if bodyInline(dst, e.Body) {
		dst = append(dst, `,"body":`...)
		dst = append(dst, e.Body...)
	} else {
		dst = append(dst, `,"body_raw":`...)
		dst = appendString(dst, e.Body)
	}
	dst = appendField(dst, "body_sha256", e.BodySHA256)
	dst = appendField(dst, "prev", e.Prev)
	dst = appendField(dst, "hash", e.Hash)
	return append(dst, "}\n"...)
}

// appendLineRefs appends refs sorted by key, whatever their encoding.
func appendLineRefs(dst []byte, refs map[string]string) []byte {
	var stack [8]ref
	sorted := stack[:0]
	for k, v := range refs {
		sorted = append(sorted, ref{k, v})
	}
	slices.SortFunc(sorted, func(a, b ref) int { return compareUTF16(a.k, b.k) })
	return appendSortedRefs(dst, sorted)
}

func appendField(dst []byte, name, v string) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, name...)
	dst = append(dst, '"', ':')
	return appendString(dst, v)
}

// bodyInline reports whether body can be written on a JSONL line as its
// exact bytes. It canonicalizes into the spare capacity of dst, which it
// leaves as it was.
func bodyInline(dst, body []byte) bool {
	if len(body) == 0 || isSpace(body[0]) || isSpace(body[len(body)-1]) {
		return false
	}
	if bytes.IndexByte(body, '\n') >= 0 || bytes.IndexByte(body, '\r') >= 0 {
		return false
	}
	_, err := AppendCanonical(dst[len(dst):], body)
	return err == nil
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// AppendCheckpointLine appends cp as one JSONL line, '\n' included:
//
//	{"checkpoint":{"ledger":"…","size":1000,"head":"…","at":"…","sig":"…"}}
//
// "ledger" is left out of a checkpoint that names no ledger.
func AppendCheckpointLine(dst []byte, cp custody.Checkpoint) []byte {
	dst = append(dst, `{"checkpoint":{`...)
	if cp.Ledger != "" {
		dst = append(dst, `"ledger":`...)
		dst = appendString(dst, cp.Ledger)
		dst = append(dst, ',')
	}
	dst = append(dst, `"size":`...)
	dst = strconv.AppendInt(dst, cp.Size, 10)
	dst = appendField(dst, "head", cp.Head)
	dst = appendField(dst, "at", cp.At)
	dst = appendField(dst, "sig", cp.Sig)
	return append(dst, "}}\n"...)
}

// AppendNoteLine appends a checkpoint as a signed note (package tlog), its
// witnesses' cosignature lines included, as one JSONL line:
//
//	{"note":"origin\nsize\nroot\nhead …\n\n— origin …\n"}
//
// The chain's verification skips these lines: package tlog checks them.
func AppendNoteLine(dst []byte, note []byte) []byte {
	dst = append(dst, `{"note":`...)
	dst = appendString(dst, note)
	return append(dst, "}\n"...)
}

// Line is one decoded JSONL line: exactly one of Entry, Checkpoint and
// Note is set.
type Line struct {
	Entry      *custody.Entry
	Checkpoint *custody.Checkpoint
	// Note is a checkpoint as a cosigned note, as AppendNoteLine wrote it.
	Note []byte
}

// VerifyJSONL decodes and verifies a whole JSONL export against pub (nil
// checks only that checkpoints match the entries). The error is a
// *LineError naming the line at fault, wrapping a *VerifyError when the
// line is well formed but the ledger is not; a cut-off tail is reported by
// a bare *VerifyError, as no line is at fault.
func VerifyJSONL(r io.Reader, pub ed25519.PublicKey) (Report, error) {
	return verifyJSONL(r, NewVerifier(pub), nil)
}

func verifyJSONL(r io.Reader, v *Verifier, seen func(Line)) (Report, error) {
	d := NewDecoder(r)
	p := jsonlPage{v: v}
	for {
		l, err := d.Next()
		if err == io.EOF {
			if err := p.flush(); err != nil {
				return Report{}, err
			}
			return p.v.Finish()
		}
		if err != nil {
			return Report{}, err
		}
		if seen != nil {
			seen(l)
		}
		if l.Note != nil {
			continue // the tree's checkpoints: package tlog verifies them
		}
		if l.Entry != nil {
			err = p.add(*l.Entry, d.line)
		} else if err = p.flush(); err == nil {
			if err = p.v.Checkpoint(*l.Checkpoint); err != nil {
				err = &LineError{Line: d.line, Err: err}
			}
		}
		if err != nil {
			return Report{}, err
		}
	}
}

// jsonlPage gathers the entries of an export a page at a time, with the
// line each came from, so that they are verified on every CPU at once and
// a failure still names its line.
type jsonlPage struct {
	v       *Verifier
	entries []custody.Entry
	lines   []int64
	done    int64 // entries verified before this page
}

// jsonlPageSize is how many entries a page holds.
const jsonlPageSize = 1024

func (p *jsonlPage) add(e custody.Entry, line int64) error {
	p.entries, p.lines = append(p.entries, e), append(p.lines, line)
	if len(p.entries) == jsonlPageSize {
		return p.flush()
	}
	return nil
}

// flush verifies the page; a failure names the line of the entry at
// fault.
func (p *jsonlPage) flush() error {
	err := p.v.Entries(p.entries)
	if err != nil && len(p.lines) == 0 {
		return err
	}
	if err != nil {
		var ve *VerifyError
		i := 0
		if errors.As(err, &ve) {
			i = int(min(max(ve.Seq-p.done-1, 0), int64(len(p.lines)-1)))
		}
		return &LineError{Line: p.lines[i], Err: err}
	}
	p.done += int64(len(p.entries))
	p.entries, p.lines = p.entries[:0], p.lines[:0]
	return nil
}

// VerifyJSONLSeeing is VerifyJSONL trusting every key in keys, for a
// ledger whose key was rotated (see Verifier); none checks only that
// checkpoints match the entries. It also hands seen, when not nil, every
// line it decodes, in order, before verifying it: what else reads the
// export (the checkpoint notes, say) reads it in the same pass. A line
// seen may still fail verification; the chain's verdict is the one
// returned. Its memory does not grow with the export: a checkpoint line
// must come before its entry or right after it, as exports write them.
func VerifyJSONLSeeing(r io.Reader, seen func(Line), keys ...ed25519.PublicKey) (Report, error) {
	return verifyJSONL(r, NewStreamVerifier(keys...), seen)
}
