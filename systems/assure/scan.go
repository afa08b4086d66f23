package assure

import (
	"regexp"
	"strings"
)

// Identifiable is one piece of text that looks like real patient data.
type Identifiable struct {
	Kind  string `json:"kind"` // "nhs_number" or "name_dob_postcode"
	Match string `json:"match"`
}

// Scanner finds identifiable patient data in text. The data policy of every
// envelope forbids it, so a hit stops the run with a finding.
type Scanner struct {
	nhs      *regexp.Regexp
	postcode *regexp.Regexp
	dob      *regexp.Regexp
	name     *regexp.Regexp
}

// newScanner compiles the patterns.
func newScanner() *Scanner {
	return &Scanner{
		nhs:      regexp.MustCompile(`\b(\d{3})[ -]?(\d{3})[ -]?(\d{4})\b`),
		postcode: regexp.MustCompile(`\b([A-Z]{1,2}[0-9][A-Z0-9]?) ?([0-9][A-Z]{2})\b`),
		dob:      regexp.MustCompile(`\b(\d{1,2}[/.-]\d{1,2}[/.-](19|20)\d{2}|(19|20)\d{2}-\d{2}-\d{2})\b`),
		name:     regexp.MustCompile(`\b([A-Z][a-z]+) ([A-Z][a-z]+(-[A-Z][a-z]*)?)\b`),
	}
}

// Scan returns every identifiable item in text: a valid-checksum NHS number
// outside the range reserved for testing, or a real-looking name together
// with a date of birth and a postcode.
func (s *Scanner) Scan(text string) []Identifiable {
	var out []Identifiable
	for _, m := range s.nhs.FindAllStringSubmatch(text, -1) {
		num := m[1] + m[2] + m[3]
		if validNHSNumber(num) && !testNHSNumber(num) {
			out = append(out, Identifiable{Kind: "nhs_number", Match: m[0]})
		}
	}
	if pc, dob := s.postcode.FindString(text), s.dob.FindString(text); pc != "" && dob != "" {
		if name := s.realLookingName(text); name != "" {
			out = append(out, Identifiable{Kind: "name_dob_postcode", Match: name + " / " + dob + " / " + pc})
		}
	}
	return out
}

// realLookingName returns the first capitalised name pair that is not one
// of the harness's own synthetic names.
func (s *Scanner) realLookingName(text string) string {
	for _, m := range s.name.FindAllStringSubmatch(text, -1) {
		if !syntheticName(m[1], m[2]) {
			return m[0]
		}
	}
	return ""
}

func syntheticName(given, family string) bool {
	for _, g := range syntheticGiven() {
		if g == given {
			return true
		}
	}
	return strings.HasPrefix(family, "Patient-") || strings.HasPrefix(family, "Subject-")
}
