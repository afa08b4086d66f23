package mesh

import (
	"regexp"
	"strings"
)

// mgrsSquareRE matches the grid zone designator and the 100 km square
// identification at the start of an MGRS string.
var mgrsSquareRE = regexp.MustCompile(`^([0-9]{1,2}[C-HJ-NP-X])([A-HJ-NP-Z]{2})`)

// Sector returns the 100 km MGRS square of an MGRS position, such as
// "11SKU" for "11S KU 12345 67890", or "unknown" when the string does not
// start with one.
func Sector(mgrs string) string {
	s := strings.ToUpper(strings.ReplaceAll(mgrs, " ", ""))
	m := mgrsSquareRE.FindStringSubmatch(s)
	if m == nil {
		return "unknown"
	}
	return m[1] + m[2]
}
