package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/custody-dev/custody/internal/mcptest"
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
			NotReplayed []struct {
				Reason, Note string
				Count        int
				Seqs         []int64 `json:"example_seqs"`
			} `json:"not_replayed"`
			Notes []string `json:"notes"`
		}
		dec := json.NewDecoder(strings.NewReader(out))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&doc); err != nil {
			t.Fatalf("decode %s: %v", out, err)
		}
		if doc.Calls != 3 || doc.Changed != 1 || len(doc.Changes) != 1 || doc.Entries == 0 || doc.Head == "" || len(doc.Notes) == 0 || len(doc.NotReplayed) != 0 {
			t.Fatalf("report %s", out)
		}
		c := doc.Changes[0]
		if c.Tool != "pay" || c.From != "allowed" || c.To != "denied" || c.Count != 1 || len(c.Seqs) != 1 || len(c.Rules) != 1 {
			t.Errorf("change %+v", c)
		}
	})
}

// replayServerConfig is a configuration fronting the mcptest server as
// upstream "t", started as command, with the tools policies given.
func replayServerConfig(t *testing.T, dir, name, command, tools string) string {
	t.Helper()
	env, _ := json.Marshal(map[string]string{mcptest.EnvServe: "1"})
	return writeTemp(t, dir, name, fmt.Sprintf(`{"mcpServers": {"t": {"command": %q, "env": %s}}, "tools": %s}`, command, env, tools))
}

// TestPolicyReplayServers: calls recorded through `custody call` fronting
// a real stdio MCP server are replayed under stricter and looser
// mcpServers configurations from the tool definitions pinned on the
// ledger, without starting the server (the replayed configurations name
// a command that does not exist); a call of a tool no pin defines is
// reported as not replayed, in the table and in the JSON.
func TestPolicyReplayServers(t *testing.T) {
	dir, data := t.TempDir(), t.TempDir()
	recorded := replayServerConfig(t, dir, "recorded.json", os.Args[0], `{"t__echo": {"access": "READ", "effect": "NONE"}}`)
	for _, msg := range []string{"hi", "a long message", "hello"} {
		if code, _, errOut := runMain(t, nil, `{"message": "`+msg+`"}`, "call", "--config", recorded, "--tool", "t__echo", "--args", "-", "--data", data); code != exitOK {
			t.Fatalf("record a call: exit %d: %s", code, errOut)
		}
	}
	// t__sleep is not governed: the call is refused, and recorded.
	if code, _, _ := runMain(t, nil, `{"millis": 0}`, "call", "--config", recorded, "--tool", "t__sleep", "--args", "-", "--data", data); code == exitOK {
		t.Fatal("an ungoverned tool's call ran")
	}
	missing := filepath.Join(dir, "no-such-server")
	stricter := replayServerConfig(t, dir, "stricter.json", missing, `{"t__echo": {"access": "READ", "effect": "NONE", "denyWhen": "args.message.size() > 4"}}`)
	looser := replayServerConfig(t, dir, "looser.json", missing, `{"t__echo": {"access": "READ", "effect": "NONE"}, "t__sleep": {"access": "READ", "effect": "NONE"}}`)
	bad := replayServerConfig(t, dir, "bad.json", missing, `{"t__echo": {"access": "READ", "effect": "NONE", "denyWhen": "args.nosuch > 4"}}`)
	t.Run("Stricter", func(t *testing.T) {
		code, out, errOut := runMain(t, nil, "", "policy", "replay", "--config", stricter, "--data", data, "--fail-on-change")
		if code != exitFailed || !strings.Contains(out, "replayed 4 calls: 2 would change") || !strings.Contains(out, "t__echo") ||
			!strings.Contains(out, "allowed → denied") {
			t.Fatalf("exit %d; stdout %s; stderr %s", code, out, errOut)
		}
	})
	t.Run("Looser", func(t *testing.T) {
		code, out, errOut := runMain(t, nil, "", "policy", "replay", "--config", looser, "--data", data, "--json")
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var doc struct {
			Calls       int `json:"calls"`
			Changed     int `json:"changed"`
			NotReplayed []struct {
				Reason string  `json:"reason"`
				Count  int     `json:"count"`
				Seqs   []int64 `json:"example_seqs"`
			} `json:"not_replayed"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("decode %s: %v", out, err)
		}
		if doc.Calls != 3 || doc.Changed != 0 || len(doc.NotReplayed) != 1 || doc.NotReplayed[0].Reason != "unpinned" ||
			doc.NotReplayed[0].Count != 1 || len(doc.NotReplayed[0].Seqs) != 1 {
			t.Fatalf("report %s", out)
		}
		_, table, _ := runMain(t, nil, "", "policy", "replay", "--config", looser, "--data", data)
		if !strings.Contains(table, "not replayed: 1 calls call a tool the new configuration governs but no pin on the ledger defines") {
			t.Errorf("table does not say what was not replayed: %s", table)
		}
	})
	t.Run("ErrConfigDoesNotFitPins", func(t *testing.T) {
		code, _, errOut := runMain(t, nil, "", "policy", "replay", "--config", bad, "--data", data)
		if code != exitUsage || !strings.Contains(errOut, "denyWhen") || !strings.Contains(errOut, "pinned") {
			t.Fatalf("exit %d, stderr %s; want a usage error naming the condition and the pins", code, errOut)
		}
	})
}
