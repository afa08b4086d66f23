package fast

import (
	"bytes"
	"math/big"
	"strconv"
	"strings"
)

// The library compares numbers as big.Rat values parsed from their text.
// The fast path gets the same answers without math/big on the common
// path: strconv.ParseFloat rounds correctly, so rounding is monotonic,
// and when the rounded values differ they order the exact values the
// same way. Only when they are equal does it compare the exact decimals,
// still without math/big.

// maxNumberLiteral bounds the number literals the fast path reasons about.
// big.Rat refuses a literal whose decimal exponent, counting fraction
// digits, exceeds 1e6 in magnitude; with at most 400 characters and a
// three-digit exponent the fast path stays far inside what it accepts.
const maxNumberLiteral = 400

// numberKnown reports whether lit, a JSON number literal, is one the fast
// path may reason about: short, with an exponent of at most three digits.
func numberKnown(lit []byte) bool {
	if len(lit) > maxNumberLiteral {
		return false
	}
	for i, b := range lit {
		if b == 'e' || b == 'E' {
			exp := bytes.TrimLeft(lit[i+1:], "+-")
			return len(exp) <= 3
		}
	}
	return true
}

// plainInteger reports whether lit has neither fraction nor exponent.
func plainInteger(lit []byte) bool {
	for _, b := range lit {
		if b == '.' || b == 'e' || b == 'E' {
			return false
		}
	}
	return true
}

// decimal is the exact value of a number literal: 0.digits × 10^exp,
// negated when neg. digits has no leading or trailing zeros; zero has no
// digits and is never negative.
type decimal struct {
	neg    bool
	digits string
	exp    int
}

// parseDecimal returns the exact value of lit, a JSON number literal for
// which numberKnown holds.
func parseDecimal(lit string) decimal {
	neg := strings.HasPrefix(lit, "-")
	lit = strings.TrimPrefix(lit, "-")
	mant, exp10 := lit, 0
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		mant = lit[:i]
		exp10, _ = strconv.Atoi(strings.TrimPrefix(lit[i+1:], "+"))
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	point := len(intPart)
	trimmed := strings.TrimLeft(digits, "0")
	point -= len(digits) - len(trimmed)
	trimmed = strings.TrimRight(trimmed, "0")
	if trimmed == "" {
		return decimal{}
	}
	return decimal{neg: neg, digits: trimmed, exp: point + exp10}
}

func (d decimal) sign() int {
	switch {
	case d.digits == "":
		return 0
	case d.neg:
		return -1
	}
	return 1
}

// isInteger reports whether d has no fractional part.
func (d decimal) isInteger() bool { return len(d.digits) <= d.exp }

// compareDecimals returns -1, 0 or +1 as a is less than, equal to or
// greater than b.
func compareDecimals(a, b decimal) int {
	sa, sb := a.sign(), b.sign()
	if sa != sb || sa == 0 {
		return cmpInt(sa, sb)
	}
	mag := cmpInt(a.exp, b.exp)
	if mag == 0 {
		mag = strings.Compare(a.digits, b.digits)
	}
	return sa * mag
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// literalInteger reports whether lit is an integer, as the library's
// "integer" type decides; known is false when the fast path cannot tell.
func literalInteger(lit []byte) (isInt, known bool) {
	if plainInteger(lit) {
		return true, true
	}
	if !numberKnown(lit) {
		return false, false
	}
	return parseDecimal(string(lit)).isInteger(), true
}

// boundOp is the comparison a numeric bound asks for.
type boundOp uint8

const (
	atLeast boundOp = iota // minimum
	atMost                 // maximum
	above                  // exclusiveMinimum
	below                  // exclusiveMaximum
)

// bound is one of minimum, maximum, exclusiveMinimum, exclusiveMaximum.
type bound struct {
	op    boundOp
	float float64 // the limit rounded as strconv.ParseFloat rounds
	exact decimal
}

// newBound compiles a limit; ok is false when it is not a number literal
// the fast path reasons about.
func newBound(op boundOp, lit string) (bound, bool) {
	if !numberKnown([]byte(lit)) {
		return bound{}, false
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil && !isRangeError(err) {
		return bound{}, false
	}
	return bound{op: op, float: f, exact: parseDecimal(lit)}, true
}

func isRangeError(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// literalFloat returns the number literal lit, for which numberKnown
// holds, rounded to a float64 as strconv.ParseFloat rounds it: exactly,
// without parsing, for a short integer.
func literalFloat(lit []byte) float64 {
	if len(lit) <= 15 && plainInteger(lit) {
		var n int64
		for _, b := range bytes.TrimPrefix(lit, []byte("-")) {
			n = n*10 + int64(b-'0')
		}
		if lit[0] == '-' {
			return -float64(n)
		}
		return float64(n)
	}
	// On overflow ParseFloat returns ±Inf, still correctly ordered.
	f, _ := strconv.ParseFloat(string(lit), 64)
	return f
}

// holds checks the number literal lit, for which numberKnown holds and
// which rounds to f, against the bound.
func (b *bound) holds(lit []byte, f float64) verdict {
	c := 0
	switch {
	case f < b.float:
		c = -1
	case f > b.float:
		c = 1
	default:
		c = compareDecimals(parseDecimal(string(lit)), b.exact)
	}
	ok := false
	switch b.op {
	case atLeast:
		ok = c >= 0
	case atMost:
		ok = c <= 0
	case above:
		ok = c > 0
	case below:
		ok = c < 0
	}
	return verdictOf(ok)
}

// multiple is a multipleOf divisor.
type multiple struct {
	small int64 // the divisor when it is a plain integer below 1e18, else 0
	rat   *big.Rat
}

// newMultiple compiles a divisor; ok is false when it is not a positive
// number literal the fast path reasons about.
func newMultiple(lit string) (*multiple, bool) {
	rat, ok := new(big.Rat).SetString(lit)
	if !numberKnown([]byte(lit)) || !ok || rat.Sign() <= 0 {
		return nil, false
	}
	m := &multiple{rat: rat}
	if plainInteger([]byte(lit)) && len(lit) <= 18 {
		m.small, _ = strconv.ParseInt(lit, 10, 64)
	}
	return m, true
}

// divides checks that the number literal lit is a multiple of m: with
// integer arithmetic when both are small integers, else exactly as the
// library does.
func (m *multiple) divides(lit []byte) verdict {
	if m.small > 0 && plainInteger(lit) && len(lit) <= 18 {
		x, err := strconv.ParseInt(string(lit), 10, 64)
		if err == nil {
			return verdictOf(x%m.small == 0)
		}
	}
	if !numberKnown(lit) {
		return unsure
	}
	x, ok := new(big.Rat).SetString(string(lit))
	if !ok {
		return unsure
	}
	return verdictOf(x.Quo(x, m.rat).IsInt())
}

// sameNumber compares two number literals exactly.
func sameNumber(a, b string) verdict {
	if !numberKnown([]byte(a)) || !numberKnown([]byte(b)) {
		return unsure
	}
	if a == b {
		return pass
	}
	return verdictOf(compareDecimals(parseDecimal(a), parseDecimal(b)) == 0)
}
