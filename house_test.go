package custody_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/custody-dev/custody"

// TestNothingOutsideSystemsImportsASystem keeps the house in order: the
// systems built on custody stand on the core, so nothing of the core
// (tests included) may import one. Only systems/ and cmd/ may.
func TestNothingOutsideSystemsImportsASystem(t *testing.T) {
	files := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch {
			case path == "systems" || path == "cmd":
				return filepath.SkipDir
			case path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata"):
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		files++
		for _, imp := range importsOf(t, path) {
			if imp == module+"/systems" || strings.HasPrefix(imp, module+"/systems/") {
				t.Errorf("%s imports %s: only systems/ and cmd/ may import a system", path, imp)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d Go files: the walk did not see the tree", files)
	}
}

// TestHouseRuleCatchesAnImport proves the rule's check reads imports as
// Go does: an aliased import of a system is caught.
func TestHouseRuleCatchesAnImport(t *testing.T) {
	dir := t.TempDir()
	src := "package x\n\nimport (\n\tp \"" + module + "/systems/peas\"\n\t\"fmt\"\n)\n"
	path := filepath.Join(dir, "x.go")
	if err := writeFile(path, src); err != nil {
		t.Fatal(err)
	}
	got := importsOf(t, path)
	if len(got) != 2 || got[0] != module+"/systems/peas" {
		t.Fatalf("imports = %q", got)
	}
}

// importsOf returns the import paths of the Go file at path.
func importsOf(t *testing.T, path string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	var out []string
	for _, s := range f.Imports {
		p, err := strconv.Unquote(s.Path.Value)
		if err != nil {
			t.Fatalf("%s: import %s: %v", path, s.Path.Value, err)
		}
		out = append(out, p)
	}
	return out
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o600) }
