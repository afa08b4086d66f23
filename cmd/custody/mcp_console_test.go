package main

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custody-dev/custody/internal/lockedbuf"
)

// TestMCPStdioConsoleDecidesAHeldCall runs custody mcp --stdio --config
// with the example envelope, signs in to the console it prints on stderr
// with the printed single-use link, approves the held post_announcement
// there, and sees the repeated call run. Stdout carries the protocol
// only, and the console ends with the session.
func TestMCPStdioConsoleDecidesAHeldCall(t *testing.T) {
	dir := t.TempDir()
	cfg := writeTemp(t, dir, "custody.json", `{}`)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stdout, stderr lockedbuf.Buffer
	m := &Main{Stdin: inR, Stdout: outW, Stderr: &stderr, Getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() {
		done <- m.Run(context.Background(), []string{"mcp", "--stdio", "--data", filepath.Join(dir, "data"), "--config", cfg})
		outW.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: io.NopCloser(io.TeeReader(outR, &stdout)), Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	// The console is printed before the session is served.
	m1 := regexp.MustCompile(`custody console on (http://127\.0\.0\.1:\d+)/`).FindStringSubmatch(stderr.String())
	if m1 == nil {
		t.Fatalf("no console URL on stderr:\n%s", stderr.String())
	}
	base := m1[1]
	link := regexp.MustCompile(regexp.QuoteMeta(base) + `/login\?code=[A-Za-z0-9_-]{43}\b`).FindString(stderr.String())
	if link == "" {
		t.Fatalf("no sign-in link on stderr:\n%s", stderr.String())
	}

	announce := func() *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "post_announcement",
			Arguments: map[string]any{"channel": "ops", "message": "DEPLOY AT 5"}})
		if err != nil || len(res.Content) == 0 {
			t.Fatalf("post_announcement: %+v, %v", res, err)
		}
		return res
	}
	held := announce()
	d, _ := held.Meta["custody/error"].(map[string]any)
	id, _ := d["approval_request_id"].(string)
	text := held.Content[0].(*mcp.TextContent).Text
	if !held.IsError || id == "" {
		t.Fatalf("the call was not held: %s", text)
	}
	for _, want := range []string{base + "/#/approvals/" + id, "custody approvals approve " + id} {
		if !strings.Contains(text, want) {
			t.Errorf("the held call's text lacks %q:\n%s", want, text)
		}
	}

	browser := consoleSignIn(t, link)
	res, err := browser.Post(base+"/v1/approvals/"+url.PathEscape(id)+"/decision", "application/json", strings.NewReader(`{"decision":"approved"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("approve on the console: %d %s", res.StatusCode, body)
	}
	if ran := announce(); ran.IsError || ran.Meta["custody/receipt"] == nil {
		t.Fatalf("the approved call did not run: %+v", ran.Content[0])
	}

	cs.Close()
	inW.Close()
	if code := <-done; code != exitOK {
		t.Fatalf("custody mcp --stdio exited %d\n%s", code, stderr.String())
	}
	if strings.Contains(stdout.String(), "/login?code=") || strings.Contains(stdout.String(), "custody console on") {
		t.Errorf("the console was announced on stdout, the MCP stream:\n%s", stdout.String())
	}
	if res, err := http.Get(base + "/healthz"); err == nil {
		res.Body.Close()
		t.Errorf("the console still answers after the session ended: %d", res.StatusCode)
	}
}

// consoleSignIn follows a printed sign-in link as a browser does: it
// opens the page, posts its form, and returns the client holding the
// session cookie.
func consoleSignIn(t *testing.T, link string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	res, err := browser.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	csrf := csrfValue.FindStringSubmatch(string(page))
	code := codeValue.FindStringSubmatch(string(page))
	if res.StatusCode != http.StatusOK || csrf == nil || code == nil {
		t.Fatalf("sign-in page: %d\n%s", res.StatusCode, page)
	}
	u, _ := url.Parse(link)
	u.RawQuery = ""
	res, err = browser.PostForm(u.String(), url.Values{"csrf": {csrf[1]}, "code": {code[1]}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	signedIn := false
	for _, c := range jar.Cookies(u) {
		signedIn = signedIn || c.Name == "custody_session"
	}
	if res.StatusCode != http.StatusOK || !signedIn {
		t.Fatalf("sign-in: %d, session cookie %v", res.StatusCode, signedIn)
	}
	return browser
}

// The sign-in form's hidden fields.
var (
	csrfValue = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	codeValue = regexp.MustCompile(`name="code" value="([^"]+)"`)
)

// TestMCPStdioConsoleOff: with --console-addr off no console is served,
// and a held call names the CLI command only.
func TestMCPStdioConsoleOff(t *testing.T) {
	got := heldOverStdio(t, "--data", filepath.Join(t.TempDir(), "data"), "--console-addr", "off")
	if !strings.Contains(got, "custody approvals approve ") || strings.Contains(got, "/#/approvals/") || strings.Contains(got, "console") {
		t.Errorf("the held call should name the CLI command only:\n%s", got)
	}
}

// TestMCPStdioConsoleAddr: without TLS the console listens on loopback
// only; another address is refused before anything is opened.
func TestMCPStdioConsoleAddr(t *testing.T) {
	for _, tc := range []struct{ name, addr, want string }{
		{"ErrAllInterfaces", ":0", "not a loopback address"},
		{"ErrUnspecified", "0.0.0.0:0", "not a loopback address"},
		{"ErrOtherHost", "192.0.2.1:8080", "not a loopback address"},
		{"ErrName", "example.com:8080", "not a loopback address"},
		{"ErrNoPort", "127.0.0.1", "want HOST:PORT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			code, out, errOut := runMain(t, nil, "", "mcp", "--stdio", "--data", data, "--console-addr", tc.addr)
			if code != exitUsage || !strings.Contains(errOut, tc.want) || out != "" {
				t.Errorf("exit %d, want %d saying %q; stdout %q\n%s", code, exitUsage, tc.want, out, errOut)
			}
		})
	}
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0", "localhost:0"} {
		if err := checkConsoleAddr(addr, false); err != nil {
			t.Errorf("%s refused: %v", addr, err)
		}
	}
	if err := checkConsoleAddr("0.0.0.0:0", true); err != nil {
		t.Errorf("with TLS, 0.0.0.0:0 refused: %v", err)
	}
}
