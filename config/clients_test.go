package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody/upstream"
)

// vscode is a .vscode/mcp.json as users keep it, with its input turned
// into an environment variable.
const vscode = `{
  "inputs": [{"type": "promptString", "id": "gh-token", "description": "GitHub token", "password": true}],
  "servers": {
    "github": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${env:GH_TOKEN}"}
    },
    "docs": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${env:DOCS}"}}
  }
}`

// server returns the upstream server named name of f.
func server(t *testing.T, f *File, name string) upstream.Server {
	t.Helper()
	up := f.Upstream()
	i := slices.IndexFunc(up.Servers, func(s upstream.Server) bool { return s.Name == name })
	if i < 0 {
		t.Fatalf("no server %q in %+v", name, up.Servers)
	}
	return up.Servers[i]
}

// writeFile writes text to name in a new directory and returns its path.
func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseClientShapes(t *testing.T) {
	envFile := writeFile(t, ".env", "# the server's settings\nAPI_KEY=k-1\nexport REGION = \"eu west\" # a comment\nLEVEL='debug'\n\n")
	vars := env(map[string]string{"GH_TOKEN": "ghp_x", "DOCS": "d-1", "ENV_FILE": envFile})
	for _, tt := range []struct {
		name, doc string
		check     func(t *testing.T, f *File)
	}{
		{"VSCode", vscode, func(t *testing.T, f *File) {
			if gh := server(t, f, "github"); gh.Command != "npx" || gh.Env["GITHUB_PERSONAL_ACCESS_TOKEN"] != "ghp_x" || gh.URL != "" {
				t.Errorf("github %+v", gh)
			}
			if d := server(t, f, "docs"); d.URL != "https://mcp.example.com/mcp" || d.Headers["Authorization"] != "Bearer d-1" || d.SSE {
				t.Errorf("docs %+v", d)
			}
			if w := f.Warnings(); len(w) != 1 || !strings.HasPrefix(w[0], "/inputs: ignored") {
				t.Errorf("warnings %q, want one about /inputs", w)
			}
		}},
		{"BothBlocks", `{"mcpServers":{"a":{"command":"x"}},"servers":{"b":{"url":"http://h/mcp"}}}`, func(t *testing.T, f *File) {
			if up := f.Upstream(); len(up.Servers) != 2 || len(f.MCPServers) != 2 {
				t.Errorf("servers %+v", up.Servers)
			}
		}},
		{"WindsurfServerURL", `{"mcpServers":{"w":{"serverUrl":"https://w.example/mcp","headers":{"X":"y"}}}}`, func(t *testing.T, f *File) {
			if w := server(t, f, "w"); w.URL != "https://w.example/mcp" || w.Headers["X"] != "y" || w.Command != "" {
				t.Errorf("w %+v", w)
			}
		}},
		{"TypeSSE", `{"mcpServers":{"s":{"type":"sse","url":"http://h/sse"}}}`, func(t *testing.T, f *File) {
			if s := server(t, f, "s"); !s.SSE || s.URL != "http://h/sse" {
				t.Errorf("s %+v", s)
			}
		}},
		{"TypeStreamableHTTP", `{"mcpServers":{"a":{"type":"streamable-http","url":"http://h/mcp"},"b":{"type":"streamableHttp","url":"http://h/mcp"}}}`, func(t *testing.T, f *File) {
			if a, b := server(t, f, "a"), server(t, f, "b"); a.SSE || b.SSE || a.URL == "" {
				t.Errorf("a %+v b %+v", a, b)
			}
		}},
		{"CursorEnvFile", `{"mcpServers":{"e":{"command":"x","envFile":"${env:ENV_FILE}","env":{"API_KEY":"from-env"}}}}`, func(t *testing.T, f *File) {
			e := server(t, f, "e")
			if e.Env["API_KEY"] != "from-env" || e.Env["REGION"] != "eu west" || e.Env["LEVEL"] != "debug" || len(e.Env) != 3 {
				t.Errorf("env %q: want env's API_KEY, the file's REGION and LEVEL", e.Env)
			}
			if f.MCPServers["e"].EnvFile != envFile {
				t.Errorf("envFile %q", f.MCPServers["e"].EnvFile)
			}
		}},
		{"ClientOnlyKeys", `{"mcpServers":{"c":{"command":"x","alwaysAllow":["read"],"autoApprove":[],"disabledTools":["write"],"timeout":90}},
			"tools":{"c__fast":{"access":"READ","effect":"NONE","timeout":"5s"}}}`, func(t *testing.T, f *File) {
			want := []string{"/mcpServers/c/alwaysAllow: ignored", "/mcpServers/c/autoApprove: ignored", "/mcpServers/c/disabledTools: ignored"}
			w := f.Warnings()
			if len(w) != len(want) {
				t.Fatalf("warnings %q, want one each for %q", w, want)
			}
			for i := range want {
				if !strings.HasPrefix(w[i], want[i]) {
					t.Errorf("warning %q, want %q...", w[i], want[i])
				}
			}
			if c := server(t, f, "c"); c.Timeout != 90*time.Second {
				t.Errorf("timeout %v, want 90s", c.Timeout)
			}
			if p := f.Upstream().Governance["c__fast"]; p.Timeout != 5*time.Second {
				t.Errorf("a policy's own timeout became %v", p.Timeout)
			}
			if got := f.LongestToolTimeout(); got != 90*time.Second {
				t.Errorf("longest tool timeout %v, want the server's 90s", got)
			}
		}},
		{"FractionalTimeout", `{"mcpServers":{"c":{"url":"http://h/mcp","timeout":1.5}}}`, func(t *testing.T, f *File) {
			if c := server(t, f, "c"); c.Timeout != 1500*time.Millisecond {
				t.Errorf("timeout %v", c.Timeout)
			}
		}},
		{"DisabledEnvFileNotRead", `{"mcpServers":{"off":{"command":"x","envFile":"/no/such/file.env","disabled":true}}}`, func(t *testing.T, f *File) {
			if up := f.Upstream(); len(up.Servers) != 0 {
				t.Errorf("servers %+v", up.Servers)
			}
		}},
		{"ClaudeDesktopHasNoWarnings", claudeDesktop, func(t *testing.T, f *File) {
			if w := f.Warnings(); len(w) != 0 {
				t.Errorf("warnings %q", w)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse([]byte(tt.doc), func(k string) string {
				if k == "REMOTE" {
					return "r"
				}
				return vars(k)
			})
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, f)
		})
	}
}

func TestParseClientRefusals(t *testing.T) {
	badEnv := writeFile(t, "bad.env", "A=1\n# fine\nB two\n")
	vars := env(map[string]string{"BAD_ENV": badEnv, "NO_FILE": filepath.Join(t.TempDir(), "missing.env")})
	for _, tt := range []struct {
		name, doc string
		want      []string // each must be in the error
	}{
		{"ErrInputReference", `{"servers":{"gh":{"command":"npx","env":{"TOKEN":"${input:gh-token}"}}}}`,
			[]string{"/servers/gh/env/TOKEN: ${input:gh-token} is a VS Code input", "write ${env:NAME}"}},
		{"ErrInputReferenceAnywhere", `{"data":"/srv/${input:dir}"}`, []string{"/data: ${input:dir}", "${env:NAME}"}},
		{"ErrWorkspaceFolder", `{"mcpServers":{"fs":{"command":"npx","args":["-y","server","${workspaceFolder}/src"]}}}`,
			[]string{"/mcpServers/fs/args/2: ${workspaceFolder} is an editor variable", "${env:NAME}"}},
		{"ErrUserHome", `{"servers":{"fs":{"command":"npx","cwd":"${userHome}"}}}`, []string{"/servers/fs/cwd: ${userHome} is an editor variable"}},
		{"ErrEnvName", `{"mcpServers":{"fs":{"command":"npx","env":{"A":"${env:1ST}"}}}}`, []string{"/mcpServers/fs/env/A: ${env:1ST}", "not an environment variable name"}},
		{"ErrDuplicateServer", `{"mcpServers":{"a":{"command":"x"},"a":{"command":"y"}}}`, []string{`/mcpServers: key "a" appears twice`}},
		{"ErrDuplicateEnv", `{"mcpServers":{"a":{"command":"x","env":{"K":"1","K":"2"}}}}`, []string{`/mcpServers/a/env: key "K" appears twice`}},
		{"ErrDuplicateTopLevel", `{"data":"a","tools":{},"data":"b"}`, []string{`/: key "data" appears twice`}},
		{"ErrDuplicateInArray", `{"webhooks":[{"name":"a","url":"http://h","url":"http://i"}]}`, []string{`/webhooks/0: key "url" appears twice`}},
		{"ErrServerInBothBlocks", `{"mcpServers":{"gh":{"command":"x"}},"servers":{"gh":{"url":"http://h/mcp"}}}`,
			[]string{`/servers/gh: server "gh" is also declared at /mcpServers/gh`, "keep one"}},
		{"ErrURLAndServerURL", `{"mcpServers":{"w":{"url":"http://h/mcp","serverUrl":"http://h/mcp"}}}`,
			[]string{"/mcpServers/w: both url and serverUrl", "keep one"}},
		{"ErrStdioWithURL", `{"servers":{"x":{"type":"stdio","url":"http://h/mcp"}}}`, []string{`/servers/x/type: "stdio" needs a command`, `"type": "http"`}},
		{"ErrSSEWithCommand", `{"mcpServers":{"x":{"type":"sse","command":"npx"}}}`, []string{`/mcpServers/x/type: "sse" needs a url`, `"stdio"`}},
		{"ErrUnknownType", `{"mcpServers":{"x":{"type":"websocket","url":"ws://h"}}}`, []string{"/mcpServers/x/type"}},
		{"ErrEnvFileOnURL", `{"mcpServers":{"x":{"url":"http://h/mcp","envFile":".env"}}}`, []string{"/mcpServers/x/envFile: a server at a url takes no envFile"}},
		{"ErrHeadersOnCommand", `{"mcpServers":{"x":{"command":"npx","headers":{"A":"b"}}}}`, []string{"/mcpServers/x/headers: a server custody starts with a command takes no headers"}},
		{"ErrCommandAndServerURL", `{"mcpServers":{"x":{"command":"npx","serverUrl":"http://h/mcp"}}}`, []string{"/mcpServers/x"}},
		{"ErrTimeoutDuration", `{"mcpServers":{"x":{"command":"a","timeout":"30s"}}}`, []string{"/mcpServers/x/timeout"}},
		{"ErrTimeoutZero", `{"mcpServers":{"x":{"command":"a","timeout":0}}}`, []string{"/mcpServers/x/timeout"}},
		{"ErrTimeoutHuge", `{"mcpServers":{"x":{"command":"a","timeout":1e300}}}`, []string{"/mcpServers/x/timeout"}},
		{"ErrAlwaysAllowNotList", `{"mcpServers":{"x":{"command":"a","alwaysAllow":"read"}}}`, []string{"/mcpServers/x/alwaysAllow"}},
		{"ErrServerTimeoutBeyondWrite", `{"http":{"writeTimeout":"30s"},"mcpServers":{"slow":{"command":"a","timeout":60}}}`,
			[]string{`/http/writeTimeout: 30s does not outlast the timeout 1m0s of server "slow"`}},
		{"ErrEnvFileMissing", `{"mcpServers":{"x":{"command":"a","envFile":"${env:NO_FILE}"}}}`, []string{"/mcpServers/x/envFile: read the env file", "missing.env"}},
		{"ErrEnvFileMalformed", `{"servers":{"x":{"command":"a","envFile":"${env:BAD_ENV}"}}}`, []string{"/servers/x/envFile: " + badEnv + ":3: not NAME=VALUE"}},
		{"ErrInputsNotObjects", `{"inputs":["gh-token"]}`, []string{"/inputs/0"}},
		{"ErrServersName", `{"servers":{"a__b":{"command":"a"}}}`, []string{"/servers"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc), vars)
			if err == nil {
				t.Fatalf("accepted; want an error saying %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestReadEnvFile(t *testing.T) {
	for _, tt := range []struct {
		name, text string
		want       map[string]string
		err        string // after the file's name: ":LINE: what"
	}{
		{"OK", "A=1\r\n\n  # comment\nexport B=two words # note\nC=\"x=\\\"y\\\"\\n\" # note\nE=\nF=\"\"\n",
			map[string]string{"A": "1", "B": "two words", "C": "x=\"y\"\n", "E": "", "F": ""}, ""},
		{"OKByteOrderMark", "\ufeffA=1\n", map[string]string{"A": "1"}, ""},
		{"OKSingleQuotesLiteral", `A='a\n$B'`, map[string]string{"A": `a\n$B`}, ""},
		{"ErrNoEquals", "A=1\nB\n", nil, ":2: not NAME=VALUE"},
		{"ErrName", "1A=x\n", nil, `:1: "1A" is not a variable name`},
		{"ErrNameSpace", "MY VAR=x\n", nil, `:1: "MY VAR" is not a variable name`},
		{"ErrUnclosedQuote", "A=1\nB=\"open\nC=2\n", nil, ":2: B: the quote is not closed"},
		{"ErrAfterQuote", "A=\"x\" y\n", nil, `:1: A: "y" after the closing quote`},
		{"ErrBareQuote", "A=it's\n", nil, ":1: A: a quote inside a bare value"},
		{"ErrEscape", `A="\q"`, nil, `:1: A: unknown escape \q`},
		{"ErrTwice", "A=1\nA=2\n", nil, ":2: A is set twice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, "x.env", tt.text)
			got, err := readEnvFile(p)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), p+tt.err) {
					t.Errorf("error %v, want one containing %q", err, p+tt.err)
				}
				return
			}
			if err != nil || len(got) != len(tt.want) {
				t.Fatalf("read %q, %v; want %q", got, err, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

// FuzzEnvLine checks that no line makes the dotenv reader panic, and that
// a line it accepts names a variable.
func FuzzEnvLine(f *testing.F) {
	for _, s := range []string{"A=1", "export B='x' # c", `C="a\"b"`, "# c", "", "D=\"open", "E=x #y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		name, _, ok, err := parseEnvLine(line)
		if ok && (err != nil || !envName.MatchString(name)) {
			t.Errorf("%q: accepted as %q, %v", line, name, err)
		}
	})
}

// FuzzDuplicateKeys checks that the duplicate check never panics and
// never refuses what it has not seen twice.
func FuzzDuplicateKeys(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":[{"b":1},{"b":2}]}`, `[]`, `{"a":{"a":1}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if _, err := decodeStrict([]byte(doc)); err != nil {
			return
		}
		if err := checkDuplicateKeys([]byte(doc)); err != nil && !strings.Contains(err.Error(), "appears twice") {
			t.Errorf("%q: %v", doc, err)
		}
	})
}

// TestExampleVSCodeConfig checks the VS Code-style configuration the
// README shows, from the repository's root as the README runs it.
func TestExampleVSCodeConfig(t *testing.T) {
	t.Chdir("..")
	f, err := Load("examples/vscode.json", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.MCPServers) != 2 || len(f.Tools) == 0 || len(f.Warnings()) != 0 {
		t.Errorf("example: %d servers, %d tools, warnings %q", len(f.MCPServers), len(f.Tools), f.Warnings())
	}
	if m := server(t, f, "memory"); m.Env["MEMORY_FILE_PATH"] != "./workspace/memory.jsonl" {
		t.Errorf("memory's env %q, want MEMORY_FILE_PATH from examples/memory.env", m.Env)
	}
}
