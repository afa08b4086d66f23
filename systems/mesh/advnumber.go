package mesh

import "math"

// numLit is a JSON number literal, as scanNumber reads it.
type numLit struct {
	text []byte
	neg  bool
	// mant holds the digits, integer and fraction, when there are at most
	// 15 of them; frac counts those of the fraction.
	mant   uint64
	digits int
	frac   int
	// intLen counts the bytes of the sign and the integer part.
	intLen int
	exp    bool
}

// scanNumber reads into n the number literal at in[start:]: the longest
// run of the bytes a number is spelt with, which must be one JSON number,
// as encoding/json reads it. It decodes and judges nothing: the advisory
// passed its contract, which the shared strict reader read, and the
// number rules are applied by numberError (see advReader.number).
func scanNumber(n *numLit, in []byte, start int) bool {
	*n = numLit{}
	i := start
	if i < len(in) && in[i] == '-' {
		n.neg = true
		i++
	}
	switch {
	case i < len(in) && in[i] == '0':
		i++
		n.digits++
	case i < len(in) && isDigit(in[i]):
		i = n.addDigits(in, i)
	default:
		return false
	}
	n.intLen = i - start
	if i < len(in) && in[i] == '.' {
		f := n.digits
		if i = n.addDigits(in, i+1); n.digits == f {
			return false
		}
		n.frac = n.digits - f
	}
	if i < len(in) && (in[i] == 'e' || in[i] == 'E') {
		n.exp = true
		i++
		if i < len(in) && (in[i] == '+' || in[i] == '-') {
			i++
		}
		e := i
		for i < len(in) && isDigit(in[i]) {
			i++
		}
		if i == e {
			return false
		}
	}
	if i < len(in) && numberByte(in[i]) {
		return false // the run goes on past the number
	}
	n.text = in[start:i]
	return true
}

// addDigits reads the digits at in[i:] into n and returns the offset past
// them.
func (n *numLit) addDigits(in []byte, i int) int {
	for ; i < len(in) && isDigit(in[i]); i++ {
		n.mant = n.mant*10 + uint64(in[i]-'0')
		n.digits++
	}
	return i
}

// numberByte reports whether c is a byte a number literal is spelt with.
func numberByte(c byte) bool {
	return isDigit(c) || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// hashable reports whether the number rules accept n for certain, so
// that the shared reader need not read it again: it has no exponent, and
// its sign and integer part are at most 15 bytes, so it is below
// 10^15 < 2^53. Any other literal is judged by numberError.
func (n *numLit) hashable() bool { return n.intLen <= 15 && !n.exp }

// exactFloat returns the float64 nearest n, as strconv.ParseFloat does,
// when n has no exponent and at most 15 digits: they then make an integer
// below 2^53, which like 10^frac (frac ≤ 15 ≤ 22) is a double exactly, so
// that one correctly rounded division gives the double nearest n. It
// reports false for any other literal.
func (n *numLit) exactFloat() (float64, bool) {
	if n.exp || n.digits > 15 {
		return 0, false
	}
	f := float64(n.mant) / math.Pow10(n.frac)
	if n.neg {
		f = -f
	}
	return f, true
}
