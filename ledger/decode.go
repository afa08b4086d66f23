package ledger

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/custody-dev/custody"
)

// DefaultMaxLine is the longest JSONL line, in bytes without its end, a
// Decoder reads.
const DefaultMaxLine = 8 << 20

// LineError says which line of a JSONL export is wrong. Err is the reason:
// a description of a malformed line, a *VerifyError, or a read error.
type LineError struct {
	Line int64
	Err  error
}

// Error returns "line N: reason".
func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// Unwrap returns the reason.
func (e *LineError) Unwrap() error { return e.Err }

// Decoder reads a JSONL ledger export line by line. It is strict: unknown
// and duplicate fields are refused, as are blank lines and lines longer
// than the limit. A line may end in "\r\n".
//
// It is written by hand for what encoding/json does not do, not for
// speed: encoding/json takes the last of duplicate members, so two
// readers of one export could see different entries, and it hands a body
// back as re-read bytes where verification needs the exact ones its
// body_sha256 covers. FuzzDecoder checks that whatever it accepts is one
// entry, checkpoint or note that encodes back and decodes the same.
type Decoder struct {
	r    *bufio.Reader
	line int64
	max  int
	buf  []byte
	c    canon
	// strs holds the strings intern shares.
	strs map[string]string
	err  error
}

// NewDecoder returns a Decoder reading r, with lines up to DefaultMaxLine.
func NewDecoder(r io.Reader) *Decoder {
	return &Decoder{r: bufio.NewReaderSize(r, 64<<10), max: DefaultMaxLine, strs: map[string]string{}}
}

// Next returns the next line. At the end of the input it returns io.EOF;
// any other error is a *LineError naming the line, and is returned again
// by every later call.
func (d *Decoder) Next() (Line, error) {
	if d.err != nil {
		return Line{}, d.err
	}
	text, err := d.readLine()
	if err == nil {
		var l Line
		if l, err = d.parse(text); err == nil {
			return l, nil
		}
	}
	if err != io.EOF {
		err = &LineError{Line: d.line, Err: err}
	}
	d.err = err
	return Line{}, err
}

// readLine returns the next line without its end. The slice is valid
// until the next call.
func (d *Decoder) readLine() ([]byte, error) {
	d.buf = d.buf[:0]
	for {
		chunk, err := d.r.ReadSlice('\n')
		if err == nil && len(d.buf) == 0 {
			return d.counted(chunk) // the common case: no copy
		}
		if len(d.buf)+len(chunk) > d.max+len("\r\n") {
			d.line++
			return nil, fmt.Errorf("longer than %d bytes", d.max)
		}
		d.buf = append(d.buf, chunk...)
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(d.buf) == 0:
			return nil, io.EOF
		case err != nil && err != io.EOF:
			d.line++
			return nil, fmt.Errorf("read: %w", err)
		}
		return d.counted(d.buf)
	}
}

// counted counts the line just read and returns it without its end.
func (d *Decoder) counted(line []byte) ([]byte, error) {
	d.line++
	line = trimEOL(line)
	if len(line) > d.max {
		return nil, fmt.Errorf("longer than %d bytes", d.max)
	}
	return line, nil
}

func trimEOL(line []byte) []byte {
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r"))
}

// Entry fields, as bits of a set.
const (
	fSeq = 1 << iota
	fAt
	fKind
	fTrace
	fActor
	fRefs
	fBody
	fBodyRaw
	fBodySHA256
	fPrev
	fHash
	fCheckpoint
	fNote
)

// fieldName names the field of an entry line for each bit, in the order
// the fields are written.
func fieldName(bit int) string {
	switch bit {
	case fSeq:
		return "seq"
	case fAt:
		return "at"
	case fKind:
		return "kind"
	case fTrace:
		return "trace"
	case fActor:
		return "actor"
	case fRefs:
		return "refs"
	case fBody:
		return "body"
	case fBodyRaw:
		return "body_raw"
	case fBodySHA256:
		return "body_sha256"
	case fPrev:
		return "prev"
	case fHash:
		return "hash"
	case fCheckpoint:
		return "checkpoint"
	case fNote:
		return "note"
	}
	return ""
}

// fieldBit returns the bit of the field named name, or 0 for none.
func fieldBit(name []byte) int {
	for bit := fSeq; bit <= fNote; bit <<= 1 {
		if fieldName(bit) == string(name) {
			return bit
		}
	}
	return 0
}

func (d *Decoder) parse(text []byte) (Line, error) {
	if len(text) == 0 {
		return Line{}, errors.New("blank line")
	}
	c := &d.c
	c.d.In, c.d.Pos = text, 0
	defer func() { c.d.In = nil }()
	var e custody.Entry
	var cp *custody.Checkpoint
	var note []byte
	c.d.SkipSpace()
	if c.d.Peek() != '{' {
		return Line{}, errors.New("not a JSON object")
	}
	c.d.Pos++
	seen := 0
	err := c.eachMember(func(key []byte) error {
		bit := fieldBit(key)
		switch {
		case bit == 0:
			return fmt.Errorf("unknown field %q", key)
		case seen&bit != 0:
			return fmt.Errorf("duplicate field %q", key)
		}
		seen |= bit
		if bit == fCheckpoint {
			var err error
			cp, err = c.checkpoint()
			return err
		}
		if bit == fNote {
			s, err := c.stringField("note")
			note = []byte(s)
			return err
		}
		return d.entryField(&e, bit)
	})
	if err == nil {
		err = c.end()
	}
	if err != nil {
		return Line{}, err
	}
	if seen&fNote != 0 {
		if seen != fNote {
			return Line{}, errors.New("a note line holds nothing but the note")
		}
		return Line{Note: note}, nil
	}
	return lineOf(&e, cp, seen)
}

// lineOf checks that the fields seen make a whole entry or a checkpoint.
func lineOf(e *custody.Entry, cp *custody.Checkpoint, seen int) (Line, error) {
	if seen&fCheckpoint != 0 {
		if seen != fCheckpoint {
			return Line{}, errors.New("a line holds an entry or a checkpoint, not both")
		}
		return Line{Checkpoint: cp}, nil
	}
	if seen&fBody != 0 && seen&fBodyRaw != 0 {
		return Line{}, errors.New(`both "body" and "body_raw"`)
	}
	if seen&fBodyRaw != 0 {
		seen |= fBody
	}
	for bit := fSeq; bit <= fHash; bit <<= 1 {
		if bit != fBodyRaw && seen&bit == 0 {
			return Line{}, fmt.Errorf("not a ledger entry: missing %q", fieldName(bit))
		}
	}
	return Line{Entry: e}, nil
}

func (d *Decoder) entryField(e *custody.Entry, bit int) error {
	c := &d.c
	var err error
	switch bit {
	case fSeq:
		e.Seq, err = c.integerField("seq")
	case fAt:
		e.At, err = c.stringField("at")
	case fKind:
		e.Kind, err = d.internField("kind")
	case fTrace:
		e.Trace, err = d.internField("trace")
	case fActor:
		e.Actor, err = d.internField("actor")
	case fRefs:
		e.Refs, err = d.refs()
	case fBody:
		e.Body, err = d.body()
	case fBodyRaw:
		var s string
		s, err = c.stringField("body_raw")
		e.Body = []byte(s)
	case fBodySHA256:
		e.BodySHA256, err = c.stringField("body_sha256")
	case fPrev:
		e.Prev, err = c.stringField("prev")
	case fHash:
		e.Hash, err = c.stringField("hash")
	}
	return err
}

// body returns a copy of the exact bytes of the body value at c.pos. Only
// its syntax is checked here; whether it can be hashed is the Verifier's
// concern, which can name the entry.
func (d *Decoder) body() ([]byte, error) {
	c := &d.c
	start := c.d.Pos
	if err := c.d.Skip(0); err != nil {
		return nil, fmt.Errorf("body: %w", syntaxError(err))
	}
	return bytes.Clone(c.d.In[start:c.d.Pos]), nil
}

// intern returns b as a string, sharing one copy among the lines that
// repeat it: kinds, actors, traces and refs recur across a ledger.
func (d *Decoder) intern(b []byte) string {
	if s, ok := d.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(d.strs) < maxInterned && len(s) <= 256 {
		d.strs[s] = s
	}
	return s
}

// maxInterned bounds the strings a Decoder keeps for intern.
const maxInterned = 4096

// eachMember reads the members of the object whose '{' has been consumed,
// calling fn with each key when the reader is at its value.
func (c *canon) eachMember(fn func(key []byte) error) error {
	c.d.SkipSpace()
	if c.d.Peek() == '}' {
		c.d.Pos++
		return nil
	}
	for {
		c.d.SkipSpace()
		key, _, err := c.d.Key(nil)
		if err != nil {
			return syntaxError(err)
		}
		if err := fn(key); err != nil {
			return err
		}
		c.d.SkipSpace()
		switch c.d.Peek() {
		case ',':
			c.d.Pos++
		case '}':
			c.d.Pos++
			return nil
		default:
			return syntaxError(c.d.Fail("expected ',' or '}' in object"))
		}
	}
}

// end refuses anything but whitespace after the line's object.
func (c *canon) end() error {
	c.d.SkipSpace()
	if c.d.Pos != len(c.d.In) {
		return syntaxError(c.d.Fail("unexpected data after the JSON object"))
	}
	return nil
}

func (c *canon) stringField(name string) (string, error) {
	b, err := c.stringBytes(name)
	return string(b), err
}

func (d *Decoder) internField(name string) (string, error) {
	b, err := d.c.stringBytes(name)
	if err != nil {
		return "", err
	}
	return d.intern(b), nil
}

// stringBytes returns the decoded string at the reader's position; it
// may alias the input.
func (c *canon) stringBytes(name string) ([]byte, error) {
	if c.d.Peek() != '"' {
		return nil, fmt.Errorf("%q must be a string", name)
	}
	s, _, err := c.d.String(nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, syntaxError(err))
	}
	return s, nil
}

// integerField reads an integer: a number literal without fraction or
// exponent, within ±2^53 as every number of a strict document is.
func (c *canon) integerField(name string) (int64, error) {
	start := c.d.Pos
	if c.d.SkipNumber() != nil {
		return 0, fmt.Errorf("%q must be an integer", name)
	}
	lit := c.d.In[start:c.d.Pos]
	if bytes.ContainsAny(lit, ".eE") {
		return 0, fmt.Errorf("%q must be an integer", name)
	}
	n, err := strconv.ParseInt(string(lit), 10, 64)
	if err != nil || n < -MaxSafeInteger || n > MaxSafeInteger {
		return 0, fmt.Errorf("%q is out of range", name)
	}
	return n, nil
}

func (d *Decoder) refs() (map[string]string, error) {
	c := &d.c
	if c.d.Peek() != '{' {
		return nil, errors.New(`"refs" must be an object of strings`)
	}
	c.d.Pos++
	refs := map[string]string{}
	err := c.eachMember(func(key []byte) error {
		if _, dup := refs[string(key)]; dup {
			return fmt.Errorf("duplicate ref %q", key)
		}
		v, err := d.internField("refs")
		refs[d.intern(key)] = v
		return err
	})
	return refs, err
}

func (c *canon) checkpoint() (*custody.Checkpoint, error) {
	if c.d.Peek() != '{' {
		return nil, errors.New(`"checkpoint" must be an object`)
	}
	c.d.Pos++
	var cp custody.Checkpoint
	var seen [5]bool
	names := [...]string{"size", "head", "at", "sig", "ledger"}
	err := c.eachMember(func(key []byte) error {
		i := slices.Index(names[:], string(key))
		if i < 0 {
			return fmt.Errorf("unknown checkpoint field %q", key)
		}
		if seen[i] {
			return fmt.Errorf("duplicate checkpoint field %q", key)
		}
		seen[i] = true
		var err error
		switch i {
		case 0:
			cp.Size, err = c.integerField("size")
		case 1:
			cp.Head, err = c.stringField("head")
		case 2:
			cp.At, err = c.stringField("at")
		case 3:
			cp.Sig, err = c.stringField("sig")
		case 4:
			cp.Ledger, err = c.stringField("ledger")
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	for i, ok := range seen[:4] { // "ledger" is optional
		if !ok {
			return nil, fmt.Errorf("not a checkpoint: missing %q", names[i])
		}
	}
	return &cp, nil
}
