package fast

import (
	"regexp"
	"testing"
)

// TestClassRunsShapes: the run matcher takes exactly the anchored
// patterns it decides alone, and where it does, it agrees with regexp.
func TestClassRunsShapes(t *testing.T) {
	tests := []struct {
		src    string
		runs   bool
		inputs []string
	}{
		{`^a{2,5}b$`, true, []string{"ab", "aab", "aaaaab", "aaaaaab", "aabb", ""}},
		{`^[a-z]{2,5}[a-z]$`, false, nil},
		{`^\d+\.\d+$`, true, []string{"1.2", "12.34", "1.", ".1", "1.2.3", "١.٢"}},
		{`^[^-]+-[^-]+$`, true, []string{"a-b", "日本-x", "-b", "a-", "a-b-c", "ab"}},
		{`^.+$`, false, nil},
		{`^(?:ab)$`, true, []string{"ab", "a", "abc"}},
		{`^(ab)$`, false, nil},
		{`^(?:ab)+$`, false, nil},
		{`^a$`, true, []string{"a", "", "aa", "b"}},
		{`a$`, false, nil},
		{`^a`, false, nil},
		{`^a|b$`, false, nil},
		{`(?m)^a$`, false, nil},
		{`^[é-ü]+x$`, true, []string{"éx", "üüx", "ýx", "x", "éxx"}},
		{`(?i)^a$`, false, nil},
		{`^(?i:a)b$`, false, nil},
		{`^a*?b$`, true, []string{"b", "aab", "ba"}},
		{`^[a-c]{1,3}[b-d]$`, false, nil},
		{`^[a-c]{1,3}[d-f]?$`, false, nil},
		{`^[a-c]{1,3}[d-f]$`, true, []string{"ad", "abcd", "abcad", "d", "aaaf"}},
		{`^[à-é]+[è-ÿ]$`, false, nil},
		{`^[à-é]+[ê-ÿ]$`, true, []string{"àê", "àéÿ", "ê", "àéa"}},
		{`^a{0}$`, true, []string{"", "a"}},
		{`^a{3}$`, true, []string{"aaa", "aa", "aaaa"}},
		{`^[0-9]{2,}$`, true, []string{"1", "12", "123456"}},
		{`^\Aa\z$`, false, nil},
		{`^x[\x{10000}-\x{10FFFF}]$`, true, []string{"x😀", "x日", "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			if got := classRuns(tt.src) != nil; got != tt.runs {
				t.Fatalf("classRuns(%s) != nil = %v, want %v", tt.src, got, tt.runs)
			}
			p, err := compilePattern(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			if (p.runs != nil) != tt.runs {
				t.Errorf("compilePattern(%s) uses runs = %v", tt.src, p.runs != nil)
			}
			re := regexp.MustCompile(tt.src)
			for _, in := range tt.inputs {
				if got, want := p.match([]byte(in)), re.MatchString(in); got != want {
					t.Errorf("%s on %q: %v, regexp says %v", tt.src, in, got, want)
				}
			}
		})
	}
}

func TestCompilePatternRefusesWhatRegexpRefuses(t *testing.T) {
	for _, src := range []string{`[a-`, `(`, `a{2}{3}`, `(?<!a)b`, `\p{Nope}`, `x**`} {
		if _, err := compilePattern(src); err == nil {
			t.Errorf("compilePattern(%s) compiles", src)
		}
	}
}

func TestClassRunHas(t *testing.T) {
	c := newClassRun([]rune{'a', 'c', 'x', 'x', 0x7f, 0xe9, 0x1F600, 0x1F600})
	for r, want := range map[rune]bool{'a': true, 'b': true, 'c': true, 'd': false, 'x': true, 0x7f: true, 0x80: true,
		0xe9: true, 0xea: false, 0x1F600: true, 0x1F601: false, 'A': false} {
		if got := c.has(r); got != want {
			t.Errorf("has(%U) = %v, want %v", r, got, want)
		}
	}
	if c.min != 1 || c.max != 1 {
		t.Errorf("a new run is %d to %d characters, want 1 to 1", c.min, c.max)
	}
}

func TestOverlaps(t *testing.T) {
	az, digits := newClassRun([]rune{'a', 'z'}), newClassRun([]rune{'0', '9'})
	high, higher := newClassRun([]rune{0x100, 0x200}), newClassRun([]rune{0x200, 0x300})
	highest := newClassRun([]rune{0x201, 0x300})
	for _, tt := range []struct {
		name string
		a, b *classRun
		want bool
	}{
		{"DisjointASCII", &az, &digits, false},
		{"SameASCII", &az, &az, true},
		{"TouchingHigh", &high, &higher, true},
		{"DisjointHigh", &high, &highest, false},
		{"ASCIIAndHigh", &az, &high, false},
	} {
		if got := overlaps(tt.a, tt.b); got != tt.want {
			t.Errorf("%s: overlaps = %v, want %v", tt.name, got, tt.want)
		}
	}
}
