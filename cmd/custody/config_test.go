package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigWarningsOnStderr checks that config check and serve print
// each key the file holds and custody ignores, once, on stderr.
func TestConfigWarningsOnStderr(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "custody.json")
	os.WriteFile(cfg, []byte(`{"inputs":[],"mcpServers":{"off":{"command":"npx","alwaysAllow":["x"],"disabled":true}}}`), 0o600)
	want := []string{"config " + cfg + ": /inputs: ignored", "config " + cfg + ": /mcpServers/off/alwaysAllow: ignored"}
	says := func(t *testing.T, stderr string) {
		t.Helper()
		for _, w := range want {
			if strings.Count(stderr, w) != 1 {
				t.Errorf("stderr says %q %d times, want once:\n%s", w, strings.Count(stderr, w), stderr)
			}
		}
	}
	t.Run("Check", func(t *testing.T) {
		code, stdout, stderr := runMain(t, nil, "", "config", "check", cfg)
		if code != exitOK || !strings.Contains(stdout, "0 of 0 tools exposed") {
			t.Fatalf("config check: %d\n%s\n%s", code, stdout, stderr)
		}
		says(t, stderr)
	})
	t.Run("Serve", func(t *testing.T) {
		var stderr bytes.Buffer
		m := &Main{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &stderr, Getenv: func(string) string { return "" }}
		if _, code, ok := m.serveFlags([]string{"--config", cfg, "--data", t.TempDir()}); !ok {
			t.Fatalf("serve refused the file: %d\n%s", code, stderr.String())
		}
		says(t, stderr.String())
	})
}
