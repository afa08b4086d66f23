package fast

import (
	"regexp"
	"regexp/syntax"
	"unicode/utf8"
)

// stringPattern is a compiled "pattern". The library matches with Go's
// regexp; so does the fast path, except for the anchored patterns most
// contracts use (identifiers, UUIDs: "^[A-Z0-9-]+$"), which a
// run-of-classes matcher decides in a fraction of the time, with the
// same answers.
type stringPattern struct {
	re   *regexp.Regexp
	runs []classRun // nil: match with re
}

// compilePattern compiles src as the library does (regexp.Compile).
func compilePattern(src string) (*stringPattern, error) {
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, err
	}
	return &stringPattern{re: re, runs: classRuns(src)}, nil
}

// match reports whether s, valid UTF-8, matches the pattern.
func (p *stringPattern) match(s []byte) bool {
	if p.runs == nil {
		return p.re.Match(s)
	}
	return matchRuns(p.runs, s)
}

// classRun is min to max (-1: no limit) characters of one class.
type classRun struct {
	ascii    [128]bool
	ranges   []rune // pairs of inclusive bounds, as syntax.Regexp.Rune
	min, max int
}

func (c *classRun) has(r rune) bool {
	if r < utf8.RuneSelf {
		return c.ascii[r]
	}
	for i := 0; i+1 < len(c.ranges); i += 2 {
		if c.ranges[i] <= r && r <= c.ranges[i+1] {
			return true
		}
	}
	return false
}

// classRuns returns the runs of an anchored pattern "^run...run$", or nil
// when the pattern is not of that shape or could need backtracking: a
// run of variable length must be the last or be followed by a run of at
// least one character from a disjoint class, so that the longest run is
// the only one that can match.
func classRuns(src string) []classRun {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil || re.Op != syntax.OpConcat || len(re.Sub) < 2 {
		return nil
	}
	subs := re.Sub
	if subs[0].Op != syntax.OpBeginText || subs[len(subs)-1].Op != syntax.OpEndText {
		return nil
	}
	var runs []classRun
	for _, sub := range subs[1 : len(subs)-1] {
		more, ok := runsOf(sub)
		if !ok {
			return nil
		}
		runs = append(runs, more...)
	}
	if !unambiguous(runs) {
		return nil
	}
	return runs
}

// runsOf translates one element of the pattern's top-level concatenation.
func runsOf(re *syntax.Regexp) ([]classRun, bool) {
	switch re.Op {
	case syntax.OpLiteral, syntax.OpCharClass:
		return literalRuns(re)
	case syntax.OpRepeat, syntax.OpPlus, syntax.OpStar, syntax.OpQuest:
		if len(re.Sub) != 1 {
			return nil, false
		}
		one, ok := literalRuns(re.Sub[0])
		if !ok || len(one) != 1 {
			return nil, false
		}
		one[0].min, one[0].max = repeatBounds(re)
		return one, true
	}
	return nil, false
}

func repeatBounds(re *syntax.Regexp) (int, int) {
	switch re.Op {
	case syntax.OpPlus:
		return 1, -1
	case syntax.OpStar:
		return 0, -1
	case syntax.OpQuest:
		return 0, 1
	}
	return re.Min, re.Max
}

// literalRuns turns a case-sensitive literal into one run per character
// and a character class into one run.
func literalRuns(re *syntax.Regexp) ([]classRun, bool) {
	if re.Flags&syntax.FoldCase != 0 {
		return nil, false
	}
	switch re.Op {
	case syntax.OpLiteral:
		out := make([]classRun, len(re.Rune))
		for i, r := range re.Rune {
			out[i] = newClassRun([]rune{r, r})
		}
		return out, true
	case syntax.OpCharClass:
		return []classRun{newClassRun(re.Rune)}, true
	}
	return nil, false
}

func newClassRun(ranges []rune) classRun {
	c := classRun{min: 1, max: 1}
	for i := 0; i+1 < len(ranges); i += 2 {
		for r := ranges[i]; r <= ranges[i+1] && r < utf8.RuneSelf; r++ {
			c.ascii[r] = true
		}
		if ranges[i+1] >= utf8.RuneSelf {
			c.ranges = append(c.ranges, max(ranges[i], utf8.RuneSelf), ranges[i+1])
		}
	}
	return c
}

// unambiguous checks that greedy matching of runs is exact.
func unambiguous(runs []classRun) bool {
	for i := range runs {
		if runs[i].min == runs[i].max || i == len(runs)-1 {
			continue
		}
		next := &runs[i+1]
		if next.min < 1 || overlaps(&runs[i], next) {
			return false
		}
	}
	return true
}

func overlaps(a, b *classRun) bool {
	for r := range a.ascii {
		if a.ascii[r] && b.ascii[r] {
			return true
		}
	}
	for i := 0; i+1 < len(a.ranges); i += 2 {
		for j := 0; j+1 < len(b.ranges); j += 2 {
			if a.ranges[i] <= b.ranges[j+1] && b.ranges[j] <= a.ranges[i+1] {
				return true
			}
		}
	}
	return false
}

// matchRuns matches s against the runs, each taking as many characters
// as it may.
func matchRuns(runs []classRun, s []byte) bool {
	for i := range runs {
		c := &runs[i]
		n := 0
		for len(s) > 0 && (c.max < 0 || n < c.max) {
			r, size := rune(s[0]), 1
			if r >= utf8.RuneSelf {
				r, size = utf8.DecodeRune(s)
			}
			if !c.has(r) {
				break
			}
			s = s[size:]
			n++
		}
		if n < c.min {
			return false
		}
	}
	return len(s) == 0
}
