package config

import (
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody"
)

// claudeDesktop is a block as users paste it from Claude Desktop.
const claudeDesktop = `{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/ana/Desktop"]
    },
    "github": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${env:GH_TOKEN}"}
    },
    "remote": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${env:REMOTE}"}}
  }
}`

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestParseClaudeDesktopBlock(t *testing.T) {
	f, err := Parse([]byte(claudeDesktop), env(map[string]string{"GH_TOKEN": "ghp_x", "REMOTE": "r"}))
	if err != nil {
		t.Fatal(err)
	}
	up := f.Upstream()
	if len(up.Servers) != 3 || up.Servers[1].Name != "github" || up.Servers[1].Env["GITHUB_PERSONAL_ACCESS_TOKEN"] != "ghp_x" {
		t.Errorf("servers %+v", up.Servers)
	}
	if up.Servers[2].Headers["Authorization"] != "Bearer r" {
		t.Errorf("headers %+v", up.Servers[2].Headers)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tt := range []struct {
		name, doc, want string
	}{
		{"ErrUnknownField", `{"mcpServers":{"fs":{"comand":"npx"}}}`, `/mcpServers/fs: additional property "comand"`},
		{"ErrUnknownTopLevel", `{"adress":"x"}`, `additional property "adress"`},
		{"ErrMissingEnv", `{"data":"${env:NOPE}"}`, "/data: environment variable NOPE is not set"},
		{"ErrCommandAndURL", `{"mcpServers":{"x":{"command":"a","url":"http://h"}}}`, "/mcpServers/x"},
		{"ErrServerName", `{"mcpServers":{"a__b":{"command":"a"}}}`, "/mcpServers"},
		{"ErrPolicyAccess", `{"tools":{"x":{"access":"READONLY","effect":"NONE"}}}`, "/tools/x/access"},
		{"ErrPolicyMissingEffect", `{"tools":{"x":{"access":"READ"}}}`, "/tools/x"},
		{"ErrTimeout", `{"tools":{"x":{"access":"READ","effect":"NONE","timeout":"0s"}}}`, "/tools/x/timeout"},
		{"ErrGlob", `{"tools":{"x[":{"access":"READ","effect":"NONE"}}}`, "not a valid glob"},
		{"ErrHTTPToolNoSchema", `{"httpTools":{"t":{"url":"http://h/x"}}}`, "/httpTools/t"},
		{"ErrNotJSON", `{"tools":`, "not valid JSON"},
		{"ErrTrailing", `{} {}`, "unexpected data"},
		{"ErrSystem", `{"systems":["brainz"]}`, "/systems/0"},
		{"ErrMCPUnknownKey", `{"mcp":{"sessionTimeout":"5m"}}`, `/mcp: additional property "sessionTimeout"`},
		{"ErrMCPIdleTimeout", `{"mcp":{"sessionIdleTimeout":"soon"}}`, "/mcp/sessionIdleTimeout"},
		{"ErrMCPIdleTimeoutZero", `{"mcp":{"sessionIdleTimeout":"0m"}}`, "/mcp/sessionIdleTimeout"},
		{"ErrMCPMaxSessions", `{"mcp":{"maxSessionsPerAgent":0}}`, "/mcp/maxSessionsPerAgent"},
		{"ErrMCPOrigin", `{"mcp":{"allowedOrigins":["https://app.example.com/path"]}}`, "/mcp/allowedOrigins/0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc), env(nil))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestPolicyDefaults(t *testing.T) {
	f, err := Parse([]byte(`{"tools":{
		"a":{"access":"WRITE","effect":"CONSEQUENTIAL"},
		"b":{"access":"WRITE","effect":"REVERSIBLE","timeout":"1.5s"},
		"c":{"access":"WRITE","effect":"CONSEQUENTIAL","approval":"NOT_REQUIRED"}}}`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	g := f.Upstream().Governance
	if g["a"].Approval != custody.HumanConfirmation || g["b"].Approval != custody.NotRequired || g["c"].Approval != custody.NotRequired {
		t.Errorf("approvals %v %v %v", g["a"].Approval, g["b"].Approval, g["c"].Approval)
	}
	if g["b"].Timeout.Milliseconds() != 1500 {
		t.Errorf("timeout %v", g["b"].Timeout)
	}
}

func TestAllowed(t *testing.T) {
	f, err := Parse([]byte(`{"agents":{"reader":{"tools":["fs__read_*"]},"none":{"tools":[]}}}`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	allowed := f.Allowed()
	for _, tt := range []struct {
		actor, tool string
		want        bool
	}{
		{"reader", "fs__read_text_file", true},
		{"reader", "fs__write_file", false},
		{"none", "fs__read_text_file", false},
		{"other", "fs__write_file", true},
	} {
		if got := allowed(tt.actor, tt.tool); got != tt.want {
			t.Errorf("%s may use %s: %v, want %v", tt.actor, tt.tool, got, tt.want)
		}
	}
	if (&File{}).Allowed() != nil {
		t.Error("no agents section should allow every agent")
	}
}

// TestExampleConfig checks the configuration the README starts from.
func TestExampleConfig(t *testing.T) {
	f, err := Load("../examples/custody.json", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.MCPServers) != 2 || len(f.Tools) == 0 {
		t.Errorf("example: %d servers, %d tools", len(f.MCPServers), len(f.Tools))
	}
}

func TestParseMCP(t *testing.T) {
	f, err := Parse([]byte(`{"mcp":{"sessionIdleTimeout":"90s","maxSessionsPerAgent":8,"allowedOrigins":["https://app.example.com"]}}`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if f.MCP.IdleTimeout() != 90*time.Second || f.MCP.MaxSessionsPerAgent != 8 || len(f.MCP.AllowedOrigins) != 1 {
		t.Errorf("mcp %+v", f.MCP)
	}
	f, err = Parse([]byte(`{}`), env(nil))
	if err != nil || f.MCP.IdleTimeout() != 0 || f.MCP.MaxSessionsPerAgent != 0 {
		t.Errorf("no mcp section: %+v, %v; want zero values (the defaults)", f.MCP, err)
	}
}
