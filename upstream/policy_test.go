package upstream

import (
	"testing"

	"github.com/custody-dev/custody"
)

func TestGovernanceForChoosesTheMostSpecificKey(t *testing.T) {
	g := Governance{
		"fs__read_text_file": {Access: "exact"},
		"fs__read_*":         {Access: "prefix"},
		"fs__[rw]*":          {Access: "class"},
		"fs__????_*":         {Access: "marks"},
		"*__write_file":      {Access: "suffix"},
		"a*":                 {Access: "a-star"},
		"*b":                 {Access: "star-b"},
		"[":                  {Access: "not a glob"},
	}
	for _, tt := range []struct{ name, key string }{
		// An exact key beats any glob, however specific.
		{"fs__read_text_file", "fs__read_text_file"},
		// Most literal characters: fs__read_ (9) over fs__[rw] (4) and fs__????_ (5).
		{"fs__read_media_file", "fs__read_*"},
		// A character class counts as no literal: fs__????_* (5) over fs__[rw]* (4).
		{"fs__wipe_disk", "fs__????_*"},
		{"fs__rm", "fs__[rw]*"},
		// *__write_file (12) over fs__????_* (5) and fs__[rw]* (4).
		{"fs__write_file", "*__write_file"},
		// Equally specific globs: the first in byte order ("*" sorts before "a").
		{"ab", "*b"},
	} {
		p, key, ok := g.For(tt.name)
		if !ok || key != tt.key || p.Access != g[tt.key].Access {
			t.Errorf("%s: governed by %q (%v, %q), want %q", tt.name, key, ok, p.Access, tt.key)
		}
	}
	if _, key, ok := g.For("x["); ok {
		t.Errorf("x[ is governed by %q", key)
	}
	if _, key, ok := g.For("memory__read_graph"); ok {
		t.Errorf("an ungoverned tool is governed by %q", key)
	}
	if _, _, ok := (Governance{}).For("x"); ok {
		t.Error("an empty governance governs")
	}
}

func TestGovernanceForIsStable(t *testing.T) {
	// Map order must not decide which of two equal globs governs.
	g := Governance{"x*": {Access: custody.Read}, "*y": {Access: custody.Write}, "?y": {Access: "q"}, "x?": {Access: "r"}}
	for range 50 {
		if _, key, _ := g.For("xy"); key != "*y" {
			t.Fatalf("xy governed by %q, want *y", key)
		}
	}
}

func TestLiteralChars(t *testing.T) {
	for glob, want := range map[string]int{
		"*": 0, "abc": 3, "a?c": 2, "fs__[rw]*": 4, "[a-z][0-9]x": 1, "a[^x]b": 2,
	} {
		if got := literalChars(glob); got != want {
			t.Errorf("literalChars(%q) = %d, want %d", glob, got, want)
		}
	}
}

func TestExposedName(t *testing.T) {
	if got := ExposedName("fs", "read_file"); got != "fs__read_file" {
		t.Errorf("exposed as %q", got)
	}
	if isGlob(ExposedName("fs", "read")) || !isGlob("fs__*") || !isGlob("fs__?") || !isGlob("fs__[a]") {
		t.Error("isGlob")
	}
}
