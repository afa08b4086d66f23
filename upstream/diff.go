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
	ops := linediff.Lines(a, b)
	var out strings.Builder
	for i := 0; i < len(ops); i++ {
		if ops[i][0] != ' ' {
			out.WriteString(ops[i] + "\n")
			continue
		}
		j := i
		for j < len(ops) && ops[j][0] == ' ' {
			j++
		}
		if j-i > 2 {
			out.WriteString("  …\n")
			i = j - 1
			continue
		}
		out.WriteString(ops[i] + "\n")
	}
	return out.String()
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
