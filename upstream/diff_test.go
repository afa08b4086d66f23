package upstream

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDiffLines(t *testing.T) {
	old := Definition{Name: "echo", Title: "Echo", Description: "Echo a message back.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}}}`)}
	for _, tt := range []struct {
		name   string
		change func(*Definition)
		want   []string
		not    []string
	}{
		{"Same", func(*Definition) {}, []string{"  …"}, []string{"- ", "+ "}},
		{"Added", func(d *Definition) {
			d.InputSchema = json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"},"to":{"type":"string"}}}`)
		}, []string{`+       "to": {`, `+         "type": "string"`}, []string{`- `}},
		{"Removed", func(d *Definition) { d.Title = "" }, []string{`-   "title": "Echo",`}, []string{"+ "}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			changed := old
			tt.change(&changed)
			d := Diff(old, changed)
			lines := strings.Split(strings.TrimSuffix(d, "\n"), "\n")
			for _, w := range tt.want {
				if !strings.Contains(d, w+"\n") {
					t.Errorf("no line %q in\n%s", w, d)
				}
			}
			for _, n := range tt.not {
				for _, l := range lines {
					if strings.HasPrefix(l, n) {
						t.Errorf("line %q in\n%s", l, d)
					}
				}
			}
			for _, l := range lines {
				if l[:2] != "  " && l[:2] != "- " && l[:2] != "+ " {
					t.Errorf("line %q has no marker", l)
				}
			}
		})
	}
}

func TestDiffCutsLongUnchangedRuns(t *testing.T) {
	// Unchanged runs of more than two lines are cut; shorter ones kept.
	old := Definition{Name: "echo", Title: "Echo", Description: "Echo a message back.", InputSchema: json.RawMessage(`{"type":"object"}`)}
	changed := old
	changed.Description = "Echo it."
	want := "  …\n" +
		`-   "description": "Echo a message back.",` + "\n" +
		`+   "description": "Echo it.",` + "\n" +
		"  …\n"
	if d := Diff(old, changed); d != want {
		t.Errorf("got\n%swant\n%s", d, want)
	}
	old.Title, changed.Title = "", ""
	want = "  {\n" + `    "name": "echo",` + "\n" + want[len("  …\n"):]
	if d := Diff(old, changed); d != want {
		t.Errorf("got\n%swant\n%s", d, want)
	}
}
