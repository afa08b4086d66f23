// Package strictjson is the one strict JSON reader of custody. The
// contract registry, the ledger's canonicalizer (and so ledger.Check, which
// every front door applies), the gateway and the mesh read documents with
// it, so no two of them can disagree about what a document says. A strict
// document is one JSON value with nothing but whitespace after it, in
// valid UTF-8, with no duplicate object keys, no unpaired surrogate
// escapes, nesting of at most MaxDepth, and numbers that every reader
// takes for the same value (see Reader.Number).
//
// Decode builds a value tree; the Reader's primitives (strings, numbers,
// literals, space, depth, the end of the document) let a scanner step
// through a document and refuse exactly what Decode refuses. FuzzStrict
// holds every user to that.
package strictjson

import (
	"encoding/json"
	"strconv"
)

// Decode parses raw as exactly one strict JSON document into the value
// tree the validator expects: map[string]any, []any, json.Number, string,
// bool and nil. Every error is a *SyntaxError naming the JSON pointer of
// the value that failed.
func Decode(raw []byte) (any, error) {
	d := Reader{In: raw}
	return d.decode()
}

// DecodeExact is Decode for a document that only exact arithmetic reads,
// such as a contract's own schema: its numbers are held to their spelling
// and the exponent bound only, so that a schema may bound a value by
// 18446744073709551615, compared exactly. Every other rule holds. A
// document that crosses a door (arguments, results, messages, envelopes)
// is read with Decode.
func DecodeExact(raw []byte) (any, error) {
	d := Reader{In: raw, Exact: true}
	return d.decode()
}

func (d *Reader) decode() (any, error) {
	d.SkipSpace()
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	if err := d.End(); err != nil {
		return nil, err
	}
	return v, nil
}

// within prefixes the pointer of err with token, as the error travels out
// of the container that holds the failing value.
func within(err error, token string) error {
	if e, ok := err.(*SyntaxError); ok {
		e.Path = append([]string{token}, e.Path...)
	}
	return err
}

func (d *Reader) value(depth int) (any, error) {
	switch d.Peek() {
	case '{':
		return d.object(depth + 1)
	case '[':
		return d.array(depth + 1)
	case '"':
		s, err := d.StringBytes()
		return string(s), err
	case 't':
		return true, d.Literal("true")
	case 'f':
		return false, d.Literal("false")
	case 'n':
		return nil, d.Literal("null")
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		// json.Number keeps the exact text: the precision of long
		// fractions survives.
		lit, err := d.NumberBytes()
		return json.Number(lit), err
	}
	return nil, d.Unexpected()
}

func (d *Reader) object(depth int) (any, error) {
	if err := d.Nest(depth); err != nil {
		return nil, err
	}
	d.Pos++ // '{'
	obj := make(map[string]any)
	d.SkipSpace()
	if d.Peek() == '}' {
		d.Pos++
		return obj, nil
	}
	for {
		if err := d.member(obj, depth); err != nil {
			return nil, err
		}
		d.SkipSpace()
		switch d.Peek() {
		case ',':
			d.Pos++
			d.SkipSpace()
		case '}':
			d.Pos++
			return obj, nil
		default:
			return nil, d.endOf("object", '}')
		}
	}
}

// endOf is the error for a byte at Pos that neither continues nor closes
// the container.
func (d *Reader) endOf(container string, closer byte) *SyntaxError {
	if d.Pos >= len(d.In) {
		return d.Fail("unexpected end of JSON in %s", container)
	}
	return d.Fail("expected ',' or '%c' in %s", closer, container)
}

// member reads one "key": value pair into obj.
func (d *Reader) member(obj map[string]any, depth int) error {
	keyAt := d.Pos
	k, _, err := d.Key(d.buf[:0])
	if err != nil {
		return err
	}
	key := string(k)
	if _, dup := obj[key]; dup {
		return DuplicateKey(keyAt, k)
	}
	v, err := d.value(depth)
	if err != nil {
		return within(err, key)
	}
	obj[key] = v
	return nil
}

func (d *Reader) array(depth int) (any, error) {
	if err := d.Nest(depth); err != nil {
		return nil, err
	}
	d.Pos++ // '['
	arr := make([]any, 0, 4)
	d.SkipSpace()
	if d.Peek() == ']' {
		d.Pos++
		return arr, nil
	}
	for {
		v, err := d.value(depth)
		if err != nil {
			return nil, within(err, strconv.Itoa(len(arr)))
		}
		arr = append(arr, v)
		d.SkipSpace()
		switch d.Peek() {
		case ',':
			d.Pos++
			d.SkipSpace()
		case ']':
			d.Pos++
			return arr, nil
		default:
			return nil, d.endOf("array", ']')
		}
	}
}
