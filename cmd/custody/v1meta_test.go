package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestV1DropsUpstreamCustodyMeta: an upstream's result that claims to
// speak for custody under _meta "custody/…" reaches a /v1 caller without
// those keys, as it reaches an MCP client; its other _meta is kept.
func TestV1DropsUpstreamCustodyMeta(t *testing.T) {
	dir := t.TempDir()
	cfg := testServerConfig(t, dir, "", filepath.Join(dir, "appended.txt"))
	base, _, stop := startServe(t, upstreamEnv(), "--data", filepath.Join(dir, "data"), "--config", cfg)
	defer stop()
	for _, path := range []string{"/v1/calls", "/v1/calls?proof=1"} {
		var ans map[string]any
		if err := json.Unmarshal([]byte(post(t, base+path, upAgent, `{"tool":"t__spoof","arguments":{}}`, 200)), &ans); err != nil {
			t.Fatal(err)
		}
		out, _ := ans["output"].(map[string]any)
		meta, _ := out["_meta"].(map[string]any)
		if meta["server/own"] != "kept" {
			t.Fatalf("%s: the server's own _meta was not kept: %v", path, ans)
		}
		for k := range meta {
			if strings.HasPrefix(k, "custody/") {
				t.Errorf("%s: the upstream's %q reached the caller: %v", path, k, meta)
			}
		}
		if r, _ := ans["receipt"].(map[string]any); r["seq"] == nil || strings.Contains(toJSON(r), "forged") {
			t.Errorf("%s: receipt %v", path, ans["receipt"])
		}
	}
}
