package config

import (
	"os"
	"regexp"
	"testing"
)

// TestOperationsGuideConfig checks that the production configuration the
// operations guide shows is one custody accepts.
func TestOperationsGuideConfig(t *testing.T) {
	raw, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```json\n(.*?)```").FindSubmatch(raw)
	if m == nil {
		t.Fatal("docs/operations.md shows no configuration")
	}
	secrets := func(string) string { return "a-token-of-twenty-four-chars" }
	f, err := Parse(m[1], secrets)
	if err != nil {
		t.Fatalf("the operations guide's configuration is refused: %v", err)
	}
	if len(f.MCPServers) != 1 || len(f.Tools) != 2 || len(f.Witnesses) != 1 {
		t.Errorf("parsed %d servers, %d tools, %d witnesses; want 1, 2, 1", len(f.MCPServers), len(f.Tools), len(f.Witnesses))
	}
}
