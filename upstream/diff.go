package upstream

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Diff renders what changed between two definitions for an operator: the
// lines of their indented JSON, "- " for a line the old one had, "+ " for
// a line the new one has, "  " for a line both share; unchanged runs of
// more than two lines are cut to "  …".
func Diff(old, new Definition) string {
	a, b := lines(old), lines(new)
	ops := lineDiff(a, b)
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

// lineDiff is a longest-common-subsequence diff of two short line lists.
func lineDiff(a, b []string) []string {
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			out = append(out, "  "+a[i])
			i, j = i+1, j+1
		case lcs[i+1][j] >= lcs[i][j+1]:
			out = append(out, "- "+a[i])
			i++
		default:
			out = append(out, "+ "+b[j])
			j++
		}
	}
	for ; i < n; i++ {
		out = append(out, "- "+a[i])
	}
	for ; j < m; j++ {
		out = append(out, "+ "+b[j])
	}
	return out
}
