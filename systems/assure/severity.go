package assure

import (
	"fmt"
	"strings"
)

// Severity is a finding's severity_on_breach, or SeverityNone: a threshold
// no finding reaches.
type Severity string

// Severities, lowest first.
const (
	SeverityLow      Severity = "LOW"
	SeverityMedium   Severity = "MEDIUM"
	SeverityHigh     Severity = "HIGH"
	SeverityCritical Severity = "CRITICAL"
	SeverityNone     Severity = "NONE"
)

// rank orders the severities; NONE is above every finding.
func (s Severity) rank() int {
	return map[Severity]int{SeverityLow: 1, SeverityMedium: 2, SeverityHigh: 3, SeverityCritical: 4, SeverityNone: 5}[s]
}

// ParseSeverity reads a severity threshold, in any case.
func ParseSeverity(s string) (Severity, error) {
	v := Severity(strings.ToUpper(strings.TrimSpace(s)))
	if v.rank() == 0 {
		return "", fmt.Errorf("severity %q: want LOW, MEDIUM, HIGH, CRITICAL or NONE", s)
	}
	return v, nil
}

// CountAtLeast counts the findings whose severity is threshold or above;
// none reach SeverityNone. A finding of an unknown severity counts: a
// gate never lets through what it cannot rank.
func CountAtLeast(findings []Finding, threshold Severity) int {
	if threshold == SeverityNone {
		return 0
	}
	n := 0
	for _, f := range findings {
		r := Severity(f.Severity).rank()
		if r == 0 || r >= threshold.rank() {
			n++
		}
	}
	return n
}
