package strictjson

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
)

// MaxSafeInteger is 2^53, the largest of the range of integers a double
// holds without gaps.
const MaxSafeInteger = 1 << 53

// maxExponentDigits bounds a number's exponent, in significant digits:
// 1e9999 is already far beyond any double, and exact arithmetic on a
// longer exponent would cost unbounded time and memory.
const maxExponentDigits = 4

// Number is a number literal that passed the number rules (see
// Reader.Number).
type Number struct {
	Lit []byte // the literal, a slice of the input
	// Int reports an integer literal (no fraction, no exponent), which
	// the rules keep within ±2^53; Float is then not set.
	Int bool
	// Float is the double the literal names, when Int is false.
	Float float64
}

// Number reads the number literal at Pos (which is '-' or a digit) and
// holds it to the rules that let every reader, exact or IEEE double,
// take it for the same value:
//
//   - an integer literal lies within ±2^53 (9007199254740993 would read
//     as 9007199254740992 as a double);
//   - an exponent has at most four significant digits (1e10000 is far
//     beyond any double; 0E00001 is fine);
//   - a literal with a fraction or an exponent lies within the range of a
//     double, and is not an integer beyond ±2^53 below 10^21 (1e20,
//     9007199254740994.0), whose shortest form would be such an integer
//     literal.
//
// With Exact, only the exponent bound holds and Float is not set. On
// error Pos is where the literal's syntax went wrong, or its start for a
// literal that breaks a rule.
func (d *Reader) Number() (Number, error) {
	start := d.Pos
	intEnd, expAt, err := d.numberSyntax()
	if err != nil {
		return Number{}, err
	}
	n := Number{Lit: d.In[start:d.Pos], Int: d.Pos == intEnd}
	if d.Exact {
		if err := d.exponent(start, expAt); err != nil {
			return Number{}, err
		}
		return n, nil
	}
	if n.Int {
		// Fifteen bytes or fewer is below 10^15 < 2^53: the common case
		// costs no call.
		if len(n.Lit) > 15 && !safeInteger(n.Lit) {
			return Number{}, d.failAt(start, "integer %s beyond ±2^53 cannot be read exactly as a double", n.Lit)
		}
		return n, nil
	}
	if n.Float, err = d.float(start, expAt); err != nil {
		return Number{}, err
	}
	return n, nil
}

// NumberBytes reads the number literal at Pos as Number does and returns
// it, a slice of the input.
func (d *Reader) NumberBytes() ([]byte, error) {
	n, err := d.Number()
	return n.Lit, err
}

// SkipNumber steps over the number literal at Pos checking its syntax
// only: Skip uses it to find where a value ends.
func (d *Reader) SkipNumber() error {
	_, _, err := d.numberSyntax()
	return err
}

// failAt moves Pos back to at and returns a *SyntaxError there.
func (d *Reader) failAt(at int, format string, args ...any) *SyntaxError {
	d.Pos = at
	return &SyntaxError{Offset: at, Msg: fmt.Sprintf(format, args...)}
}

// safeInteger reports whether the integer literal lit lies within ±2^53.
func safeInteger(lit []byte) bool {
	digits := len(lit)
	if lit[0] == '-' {
		digits--
	}
	if digits <= 15 { // below 10^15 < 2^53
		return true
	}
	n, err := strconv.ParseInt(string(lit), 10, 64)
	return err == nil && n >= -MaxSafeInteger && n <= MaxSafeInteger
}

// float returns the double that the literal from start to Pos, with a
// fraction or an exponent (whose digits start at expAt, if it has one),
// names, or the rule it breaks.
func (d *Reader) float(start, expAt int) (float64, error) {
	if err := d.exponent(start, expAt); err != nil {
		return 0, err
	}
	lit := d.In[start:d.Pos]
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, d.failAt(start, "number %s is beyond the range of a double", lit)
	}
	if abs := math.Abs(f); abs > MaxSafeInteger && abs < 1e21 && f == math.Trunc(f) {
		return 0, d.failAt(start, "number %s is an integer beyond ±2^53 that cannot be read exactly as a double", lit)
	}
	return f, nil
}

// exponent refuses an exponent, whose digits are at In[expAt:Pos] (none
// when expAt is 0), of more than maxExponentDigits significant digits.
func (d *Reader) exponent(start, expAt int) error {
	// Leading zeros change nothing: 0E00000 is zero.
	if expAt > 0 && d.Pos-expAt > maxExponentDigits && len(bytes.TrimLeft(d.In[expAt:d.Pos], "0")) > maxExponentDigits {
		return d.failAt(start, "number exponent out of range: at most %d digits", maxExponentDigits)
	}
	return nil
}

// numberSyntax steps over a number literal at Pos as JSON spells it and
// returns where its integer part ends and where the digits of its
// exponent start (0 for none).
func (d *Reader) numberSyntax() (intEnd, expAt int, err error) {
	if d.Pos < len(d.In) && d.In[d.Pos] == '-' {
		d.Pos++
	}
	switch {
	case d.Pos < len(d.In) && d.In[d.Pos] == '0':
		d.Pos++
	case !d.digits():
		return 0, 0, d.Fail("invalid number: digit expected")
	}
	intEnd = d.Pos
	if d.Pos < len(d.In) && d.In[d.Pos] == '.' {
		d.Pos++
		if !d.digits() {
			return 0, 0, d.Fail("invalid number: digit expected after '.'")
		}
	}
	if d.Pos < len(d.In) && (d.In[d.Pos] == 'e' || d.In[d.Pos] == 'E') {
		d.Pos++
		if d.Pos < len(d.In) && (d.In[d.Pos] == '+' || d.In[d.Pos] == '-') {
			d.Pos++
		}
		expAt = d.Pos
		if !d.digits() {
			return 0, 0, d.Fail("invalid number: digit expected in exponent")
		}
	}
	return intEnd, expAt, nil
}

func (d *Reader) digits() bool {
	start := d.Pos
	for d.Pos < len(d.In) && d.In[d.Pos] >= '0' && d.In[d.Pos] <= '9' {
		d.Pos++
	}
	return d.Pos > start
}
