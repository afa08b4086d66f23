package config

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLoadResolvesDataAgainstTheFile: a relative data directory is the
// file's; an absolute one is kept.
func TestLoadResolvesDataAgainstTheFile(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct{ data, want string }{
		"Relative": {"evidence", filepath.Join(dir, "evidence")},
		"Dotted":   {"../up/evidence", filepath.Join(filepath.Dir(dir), "up", "evidence")},
		"Absolute": {"/var/lib/custody", "/var/lib/custody"},
		"None":     {"", ""},
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, "custody.json")
			doc := `{}`
			if c.data != "" {
				doc = `{"data": "` + c.data + `"}`
			}
			if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := Load(p, func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			if f.Data != c.want {
				t.Errorf("data %q, want %q", f.Data, c.want)
			}
		})
	}
}
