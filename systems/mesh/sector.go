package mesh

import (
	"regexp"
	"strings"
)

// mgrsSquareRE matches the grid zone designator and the 100 km square
// identification at the start of an MGRS string.
var mgrsSquareRE = regexp.MustCompile(`^([0-9]{1,2}[C-HJ-NP-X])([A-HJ-NP-Z]{2})`)

// sector returns the 100 km MGRS square of an MGRS position, such as
// "11SKU" for "11S KU 12345 67890", or "unknown" when the string does not
// start with one.
func sector(mgrs string) string {
	if s, ok := asciiSector(mgrs); ok {
		return s
	}
	return regexpSector(mgrs)
}

// regexpSector is sector by its definition: spaces removed, upper-cased,
// matched against mgrsSquareRE.
func regexpSector(mgrs string) string {
	s := strings.ToUpper(strings.ReplaceAll(mgrs, " ", ""))
	m := mgrsSquareRE.FindStringSubmatch(s)
	if m == nil {
		return "unknown"
	}
	return m[1] + m[2]
}

// asciiSector is sector of an MGRS string whose first five characters
// other than spaces are ASCII, without a regular expression. It reports
// false, leaving the string to regexpSector, when it meets any other byte
// among them: upper-casing a non-ASCII rune may yield an ASCII letter.
func asciiSector(mgrs string) (string, bool) {
	var head [5]byte
	n := 0
	for i := 0; i < len(mgrs) && n < len(head); i++ {
		c := mgrs[i]
		switch {
		case c == ' ':
			continue
		case c >= 0x80:
			return "", false
		case c >= 'a' && c <= 'z':
			c -= 'a' - 'A'
		}
		head[n] = c
		n++
	}
	digits := 0
	for digits < 2 && digits < n && isDigit(head[digits]) {
		digits++
	}
	// The zone is one or two digits then a band letter; with two digits
	// the pattern cannot match one of them alone, as the second is not a
	// letter.
	if digits == 0 || n < digits+3 || !zoneBand(head[digits]) || !squareLetter(head[digits+1]) || !squareLetter(head[digits+2]) {
		return "unknown", true
	}
	return string(head[:digits+3]), true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// zoneBand reports whether c is in [C-HJ-NP-X].
func zoneBand(c byte) bool { return c >= 'C' && c <= 'X' && c != 'I' && c != 'O' }

// squareLetter reports whether c is in [A-HJ-NP-Z].
func squareLetter(c byte) bool { return c >= 'A' && c <= 'Z' && c != 'I' && c != 'O' }
