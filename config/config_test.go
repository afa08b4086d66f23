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
		{"ErrSessionLifetime", `{"console_session_lifetime":"a day"}`, "/console_session_lifetime"},
		{"ErrSessionLifetimeZero", `{"console_session_lifetime":"0s"}`, "/console_session_lifetime"},
		{"ErrHTTPUnknownField", `{"http":{"readTimout":"5s"}}`, `/http: additional property "readTimout"`},
		{"ErrHTTPNotDuration", `{"http":{"idleTimeout":"2 minutes"}}`, "/http/idleTimeout"},
		{"ErrHTTPZero", `{"http":{"readTimeout":"0s"}}`, `/http/readTimeout: "0s" is not a positive duration`},
		{"ErrHTTPSmallBody", `{"http":{"maxBodyBytes":10}}`, "/http/maxBodyBytes"},
		{"ErrHTTPWriteBeforeTool", `{"http":{"writeTimeout":"30s"},"tools":{"slow":{"access":"READ","effect":"NONE","timeout":"1m"}}}`,
			"/http/writeTimeout: 30s does not outlast /tools/slow/timeout 1m0s"},
		{"ErrTLSNoKey", `{"tls":{"cert":"c.pem"}}`, "/tls"},
		{"ErrTLSUnknownField", `{"tls":{"cert":"c.pem","key":"k.pem","ca":"x"}}`, `/tls: additional property "ca"`},
		{"ErrMCPUnknownKey", `{"mcp":{"sessionTimeout":"5m"}}`, `/mcp: additional property "sessionTimeout"`},
		{"ErrMCPIdleTimeout", `{"mcp":{"sessionIdleTimeout":"soon"}}`, "/mcp/sessionIdleTimeout"},
		{"ErrMCPIdleTimeoutZero", `{"mcp":{"sessionIdleTimeout":"0m"}}`, "/mcp/sessionIdleTimeout"},
		{"ErrMCPMaxSessions", `{"mcp":{"maxSessionsPerAgent":0}}`, "/mcp/maxSessionsPerAgent"},
		{"ErrResourceUnknownKey", `{"resources":{"d+docs://*":{"access":"READ","maxbytes":5}}}`, `/resources/d+docs:~1~1*: additional property "maxbytes"`},
		{"ErrResourceWrite", `{"resources":{"d+docs://*":{"access":"WRITE"}}}`, "/resources/d+docs:~1~1*/access"},
		{"ErrResourceMaxBytes", `{"resources":{"d+docs://*":{"maxBytes":0}}}`, "/resources/d+docs:~1~1*/maxBytes"},
		{"ErrResourceApproval", `{"resources":{"d+docs://*":{"approval":"MAYBE"}}}`, "/resources/d+docs:~1~1*/approval"},
		{"ErrPromptUnknownKey", `{"prompts":{"d__greet":{"access":"READ"}}}`, `/prompts/d__greet: additional property "access"`},
		{"ErrPromptGlob", `{"prompts":{"d__[":{}}}`, "/prompts/d__[: not a valid glob"},
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

func TestSessionLifetime(t *testing.T) {
	f, err := Parse([]byte(`{"console_session_lifetime":"8h"}`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if d, err := f.SessionLifetime(); err != nil || d != 8*time.Hour {
		t.Errorf("session lifetime %v, %v; want 8h", d, err)
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

func TestHTTPAndTLS(t *testing.T) {
	f, err := Parse([]byte(`{"http":{"readHeaderTimeout":"2s","readTimeout":"10s","writeTimeout":"2m","idleTimeout":"90s","maxBodyBytes":65536},
		"tls":{"cert":"${env:DIR}/cert.pem","key":"${env:DIR}/key.pem"},
		"tools":{"x":{"access":"READ","effect":"NONE","timeout":"90s"}}}`), env(map[string]string{"DIR": "/etc/custody"}))
	if err != nil {
		t.Fatal(err)
	}
	want := HTTPTimeouts{ReadHeader: 2 * time.Second, Read: 10 * time.Second, Write: 2 * time.Minute, Idle: 90 * time.Second}
	if got := f.HTTP.Timeouts(); got != want || f.HTTP.MaxBodyBytes != 65536 {
		t.Errorf("http %+v %d, want %+v", got, f.HTTP.MaxBodyBytes, want)
	}
	if f.TLS == nil || f.TLS.Cert != "/etc/custody/cert.pem" || f.TLS.Key != "/etc/custody/key.pem" {
		t.Errorf("tls %+v", f.TLS)
	}
	if got := f.LongestToolTimeout(); got != 90*time.Second {
		t.Errorf("longest tool timeout %v", got)
	}
	empty, err := Parse([]byte(`{}`), env(nil))
	if err != nil || empty.HTTP.Timeouts() != (HTTPTimeouts{}) || empty.TLS != nil {
		t.Errorf("an empty file: %+v %v", empty, err)
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

func TestRefusalBudget(t *testing.T) {
	f, err := Parse([]byte(`{"tools":{"a":{"access":"READ","effect":"NONE","maxCallsPerTrace":5,"maxRefusalsPerTrace":3}}}`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if p := f.Upstream().Governance["a"]; p.MaxCallsPerTrace != 5 || p.MaxRefusalsPerTrace != 3 {
		t.Errorf("budgets %d calls, %d refusals; want 5 and 3", p.MaxCallsPerTrace, p.MaxRefusalsPerTrace)
	}
	if _, err := Parse([]byte(`{"tools":{"a":{"access":"READ","effect":"NONE","maxRefusalsPerTrace":-1}}}`), env(nil)); err == nil || !strings.Contains(err.Error(), "/tools/a/maxRefusalsPerTrace") {
		t.Errorf("negative refusal budget: %v", err)
	}
}

func TestEscalateAt(t *testing.T) {
	f, err := Parse([]byte(`{"escalateAt":0.8}`), env(nil))
	if err != nil || f.EscalateAt != 0.8 {
		t.Fatalf("escalateAt 0.8: %v, %v", f, err)
	}
	for _, doc := range []string{`{"escalateAt":1}`, `{"escalateAt":0}`, `{"escalateAt":-0.5}`} {
		if _, err := Parse([]byte(doc), env(nil)); err == nil || !strings.Contains(err.Error(), "/escalateAt") {
			t.Errorf("%s: %v, want an error at /escalateAt", doc, err)
		}
	}
}

func TestWebhookSecret(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	f, err := Parse([]byte(`{"webhooks":[{"name":"pager","url":"https://pager.example/hook","secret":"${env:PAGER_SECRET}"}]}`), env(map[string]string{"PAGER_SECRET": secret}))
	if err != nil || f.Webhooks[0].Secret != secret {
		t.Fatalf("secret from the environment: %+v, %v", f, err)
	}
	_, err = Parse([]byte(`{"webhooks":[{"name":"pager","url":"https://pager.example/hook","secret":"hunter2"}]}`), env(nil))
	if err == nil || !strings.Contains(err.Error(), "/webhooks/0/secret") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("a secret not in whsec_ form: %v, want an error at /webhooks/0/secret that does not repeat it", err)
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

func TestResourcesAndPrompts(t *testing.T) {
	f, err := Parse([]byte(`{"resources":{"d+docs://*":{"access":"READ","maxBytes":1024,"approval":"HUMAN_CONFIRMATION"},"d+docs://a":{}},
		"prompts":{"d__greet":{},"d__*":{"approval":"HUMAN_CONFIRMATION"}}}`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	up := f.Upstream()
	if p := up.Resources["d+docs://*"]; p.MaxBytes != 1024 || p.Approval != custody.HumanConfirmation {
		t.Errorf("resource policy %+v", p)
	}
	if _, key, ok := up.Resources.For("d+docs://a/b"); !ok || key != "d+docs://*" {
		t.Errorf("d+docs://a/b governed by %q", key)
	}
	if p, key, _ := up.Prompts.For("d__other"); key != "d__*" || p.Approval != custody.HumanConfirmation {
		t.Errorf("d__other governed by %q %+v", key, p)
	}
	if p := up.Prompts["d__greet"]; p.Approval != "" {
		t.Errorf("prompt policy %+v", p)
	}
}
