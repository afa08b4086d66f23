// Package linediff compares two short lists of lines, as the console and
// an MCP client show a change: a tool's definition re-pinned, an edit a
// held call would make.
package linediff

import "strings"

// Lines is a longest-common-subsequence diff of a and b: each line of
// the result is "  " (in both), "- " (only in a) or "+ " (only in b)
// followed by the line. It takes time and space len(a)*len(b): for short
// lists, as definitions and edits are.
func Lines(a, b []string) []string {
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

// Compact renders ops, the result of Lines, one line each, with every
// run of more than two unchanged lines cut to "  …": what a reader needs
// to see of a change is what changed, and a little around it.
func Compact(ops []string) string {
	var out strings.Builder
	for i := 0; i < len(ops); i++ {
		j := i
		for j < len(ops) && strings.HasPrefix(ops[j], "  ") {
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
