package upstream

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/custody-dev/custody/internal/linediff"
)

// Diff renders what changed between two definitions for an operator: the
// lines of their indented JSON, "- " for a line the old one had, "+ " for
// a line the new one has, "  " for a line both share; unchanged runs of
// more than two lines are cut to "  …".
func Diff(old, new Definition) string {
	a, b := lines(old), lines(new)
	return linediff.Compact(linediff.Lines(a, b))
}

// lines returns d as indented JSON lines.
func lines(d Definition) []string {
	raw, _ := json.Marshal(d)
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return []string{string(raw)}
	}
	return strings.Split(b.String(), "\n")
}
