package linediff

import (
	"slices"
	"testing"
)

func TestLines(t *testing.T) {
	for name, tc := range map[string]struct{ a, b, want []string }{
		"Same":     {[]string{"x", "y"}, []string{"x", "y"}, []string{"  x", "  y"}},
		"Changed":  {[]string{"a", "b", "c"}, []string{"a", "B", "c"}, []string{"  a", "- b", "+ B", "  c"}},
		"Added":    {[]string{"a"}, []string{"a", "b"}, []string{"  a", "+ b"}},
		"Removed":  {[]string{"a", "b"}, []string{"b"}, []string{"- a", "  b"}},
		"Empty":    {nil, nil, nil},
		"AllNew":   {nil, []string{"n"}, []string{"+ n"}},
		"Swapped":  {[]string{"a", "b"}, []string{"b", "a"}, []string{"- a", "  b", "+ a"}},
		"Inserted": {[]string{"a", "c"}, []string{"a", "b", "c"}, []string{"  a", "+ b", "  c"}},
	} {
		if got := Lines(tc.a, tc.b); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q", name, got)
		}
	}
}

func TestCompact(t *testing.T) {
	ops := Lines([]string{"a", "b", "c", "d", "e", "f"}, []string{"a", "b", "C", "d", "e", "f"})
	if got, want := Compact(ops), "  a\n  b\n- c\n+ C\n  …\n"; got != want {
		t.Errorf("Compact = %q, want %q", got, want)
	}
	if got := Compact(Lines([]string{"x", "y"}, []string{"x", "y"})); got != "  x\n  y\n" {
		t.Errorf("two unchanged lines are kept: %q", got)
	}
}
