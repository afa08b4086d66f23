package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// replayConfig is a configuration with one HTTP tool, "pay", at url,
// governed by the policy members given.
func replayConfig(url, policy string) string {
	return fmt.Sprintf(`{"httpTools": {"pay": {"url": "%s/pay",
    "input": {"type": "object", "properties": {"amount": {"type": "number"}}},
    "output": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}},
  "tools": {"pay": {"access": "WRITE", "effect": "REVERSIBLE"%s}}}`, url, policy)
}

// TestPolicyReplay: custody policy replay reports the calls a new
// configuration decides otherwise, as a table and as JSON, exits 1 with
// --fail-on-change only when something changes, and refuses a bad
// configuration.
func TestPolicyReplay(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"ok": true}`)) }))
	defer api.Close()
	dir, data := t.TempDir(), t.TempDir()
	recorded := writeTemp(t, dir, "recorded.json", replayConfig(api.URL, ""))
	for _, amount := range []string{"5", "500", "50"} {
		if code, _, errOut := runMain(t, nil, `{"amount": `+amount+`}`, "call", "--config", recorded, "--tool", "pay", "--args", "-", "--data", data); code != exitOK {
			t.Fatalf("record a call: exit %d: %s", code, errOut)
		}
	}
	stricter := writeTemp(t, dir, "stricter.json", replayConfig(api.URL, `, "denyWhen": "args.amount > 100"`))
	bad := writeTemp(t, dir, "bad.json", replayConfig(api.URL, `, "denyWhen": "args.amount >"`))
	tests := []struct {
		name   string
		config string
		flags  []string
		code   int
		out    string
	}{
		{"Same", recorded, []string{"--fail-on-change"}, exitOK, "replayed 3 calls: 0 would change"},
		{"Changed", stricter, nil, exitOK, "allowed → denied"},
		{"FailOnChange", stricter, []string{"--fail-on-change"}, exitFailed, "condition /tools/pay/denyWhen"},
		{"ErrBadConfig", bad, nil, exitUsage, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"policy", "replay", "--config", tt.config, "--data", data}, tt.flags...)
			code, out, errOut := runMain(t, nil, "", args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stdout %s; stderr %s", code, tt.code, out, errOut)
			}
			if tt.code == exitUsage && !strings.Contains(errOut, "denyWhen") {
				t.Errorf("stderr %q does not name the bad condition", errOut)
			}
			if !strings.Contains(out, tt.out) {
				t.Errorf("stdout %q does not say %q", out, tt.out)
			}
		})
	}
	t.Run("JSON", func(t *testing.T) {
		code, out, errOut := runMain(t, nil, "", "policy", "replay", "--config", stricter, "--data", data, "--json", "--since", "7d")
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var doc struct {
			Entries int64  `json:"entries"`
			Head    string `json:"head"`
			Calls   int    `json:"calls"`
			Changed int    `json:"changed"`
			Changes []struct {
				Tool, Agent, From, To string
				Count                 int
				Rules                 []string
				Seqs                  []int64 `json:"example_seqs"`
			} `json:"changes"`
			Skipped int      `json:"skipped"`
			Notes   []string `json:"notes"`
		}
		dec := json.NewDecoder(strings.NewReader(out))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&doc); err != nil {
			t.Fatalf("decode %s: %v", out, err)
		}
		if doc.Calls != 3 || doc.Changed != 1 || len(doc.Changes) != 1 || doc.Entries == 0 || doc.Head == "" || len(doc.Notes) == 0 {
			t.Fatalf("report %s", out)
		}
		c := doc.Changes[0]
		if c.Tool != "pay" || c.From != "allowed" || c.To != "denied" || c.Count != 1 || len(c.Seqs) != 1 || len(c.Rules) != 1 {
			t.Errorf("change %+v", c)
		}
	})
}
