package sqlite

import (
	"encoding/hex"
	"fmt"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
)

// The entries table keeps body_sha256 and hash as 32-byte BLOBs, and no
// prev: an entry's prev is the hash of the entry before it. custody.Entry
// carries all three as lowercase hex, as the chain, canonical JSON and
// the export spell them; the store converts at its edge.

// digestSize is the size of a stored digest: a SHA-256.
const digestSize = 32

// digest scans a stored digest as the lowercase hex an entry carries. A
// BLOB is encoded. TEXT, which only a row changed outside custody holds
// (or one the migration to bytes found not to be 64 lowercase hex
// digits), is taken as it is, so that verification reports it. NULL
// scans as "".
type digest string

// Scan implements sql.Scanner.
func (d *digest) Scan(src any) error {
	switch v := src.(type) {
	case []byte:
		if len(v) != digestSize {
			*d = digest(hex.EncodeToString(v))
			return nil
		}
		var buf [2 * digestSize]byte // one allocation: the string's
		hex.Encode(buf[:], v)
		*d = digest(buf[:])
	case string:
		*d = digest(v)
	case nil:
		*d = ""
	default:
		return fmt.Errorf("a digest stored as %T", src)
	}
	return nil
}

// appendDigest appends the bytes that hexDigits spells to dst. Anything
// but a SHA-256 in lowercase hex is refused: the store writes only what
// the sealer computed, and reads back exactly what it wrote. It is not
// encoding/hex because that accepts upper case, which would read back as
// another spelling of the digest than the one the chain hashed.
func appendDigest(dst []byte, field, hexDigits string) ([]byte, error) {
	if len(hexDigits) != 2*digestSize {
		return dst, fmt.Errorf("%s %q is not a SHA-256 in lowercase hex", field, hexDigits)
	}
	n := len(dst)
	for i := 0; i < len(hexDigits); i += 2 {
		hi, lo := nibble(hexDigits[i]), nibble(hexDigits[i+1])
		if hi > 15 || lo > 15 {
			return dst[:n], fmt.Errorf("%s %q is not a SHA-256 in lowercase hex", field, hexDigits)
		}
		dst = append(dst, hi<<4|lo)
	}
	return dst, nil
}

// nibble returns the value of a lowercase hex digit, 255 for any other byte.
func nibble(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return 255
}

// prevColumn is an entry's prev as a column of a query on entries: the
// hash of the row before it, NULL when there is none. Queries that read
// the entries in seq order take prev from the row before instead (see
// chain).
const prevColumn = `(SELECT p.hash FROM entries p WHERE p.seq = entries.seq - 1)`

// prevOf completes an entry read with prevColumn: the first entry's prev
// is the genesis value; any other entry must have the entry before it.
func prevOf(e *custody.Entry, prev digest) error {
	switch {
	case e.Seq == 1:
		e.Prev = ledger.GenesisPrev()
	case prev == "":
		return &ledger.VerifyError{Seq: e.Seq - 1, Reason: fmt.Sprintf("missing: the entry before seq %d is not on the ledger", e.Seq)}
	default:
		e.Prev = string(prev)
	}
	return nil
}

// chain gives the entries of a scan in seq order their prev: the hash of
// the entry read before, starting from the prev of the first entry read.
// An entry read after a gap gets the hash before the gap, which the
// verifier reports as a missing entry before it looks at prev.
type chain struct{ prev string }

// link sets e's prev and remembers e's hash for the next entry.
func (c *chain) link(e *custody.Entry) {
	e.Prev, c.prev = c.prev, e.Hash
}
