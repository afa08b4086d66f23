package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody/internal/lockedbuf"
)

// startServe runs custody serve in-process on 127.0.0.1:0 with env as its
// whole environment. It returns the base URL, everything printed before
// it, the printed output so far, and a function that stops the command and
// returns its exit code.
func startServe(t *testing.T, env map[string]string, args ...string) (base string, out *lockedbuf.Buffer, stop func() int) {
	t.Helper()
	return startServeLogged(t, &lockedbuf.Buffer{}, env, args...)
}

// startServeLogged is startServe with serve's log written to stderr.
func startServeLogged(t *testing.T, stderr *lockedbuf.Buffer, env map[string]string, args ...string) (base string, out *lockedbuf.Buffer, stop func() int) {
	t.Helper()
	pr, pw := io.Pipe()
	out = &lockedbuf.Buffer{}
	m := &Main{Stdin: strings.NewReader(""), Stdout: pw, Stderr: stderr, Getenv: func(k string) string { return env[k] }}
	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	go func() {
		code <- m.Run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...))
		pw.Close()
	}()
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			out.Write([]byte(sc.Text() + "\n"))
			if u, ok := strings.CutPrefix(sc.Text(), "custody serving on "); ok {
				urls <- u
			}
		}
	}()
	stop = func() int {
		cancel()
		select {
		case c := <-code:
			return c
		case <-time.After(15 * time.Second):
			t.Fatalf("serve did not stop; stderr:\n%s", stderr)
			return -1
		}
	}
	select {
	case base = <-urls:
	case c := <-code:
		t.Fatalf("serve exited with %d; stderr:\n%s", c, stderr)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatalf("serve did not start; stderr:\n%s", stderr)
	}
	return base, out, stop
}

func TestServe(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	base, out, stop := startServe(t, map[string]string{}, "--data", data)

	res, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("healthz: %d", res.StatusCode)
	}

	agent := readToken(t, filepath.Join(data, agentTokenFile))
	operator := readToken(t, filepath.Join(data, operatorTokenFile))
	link := regexp.MustCompile(regexp.QuoteMeta(base) + `/login\?code=[A-Za-z0-9_-]{43}\b`).FindString(out.String())
	if link == "" || strings.Contains(out.String(), operator) {
		t.Errorf("no console sign-in link with a code printed, or the token shown:\n%s", out)
	}
	if page := get(t, link); !strings.Contains(page, "Sign in as operator") {
		t.Errorf("the printed link does not offer to sign in as the operator:\n%s", page)
	}
	body := post(t, base+"/v1/calls", agent, `{"tool":"get_time","arguments":{"zone":"UTC"}}`, 200)
	if !strings.Contains(body, `"receipt"`) {
		t.Errorf("call: %s", body)
	}
	post(t, base+"/v1/calls", operator, `{"tool":"get_time","arguments":{}}`, 403)
	post(t, base+"/v1/approvals/x/decision", agent, `{"decision":"approved"}`, 403)
	// The store's commit count reaches /metrics.
	if m := get(t, base+"/metrics"); !regexp.MustCompile(`(?m)^custody_ledger_commits_total [1-9]\d*$`).MatchString(m) {
		t.Errorf("metrics lack the store's commits:\n%s", m)
	}
	if code := stop(); code != exitOK {
		t.Fatalf("exit code %d", code)
	}

	// A second start reuses the kept tokens and shows no new link.
	base, out, stop = startServe(t, map[string]string{"CUSTODY_DATA": data})
	if got := readToken(t, filepath.Join(data, agentTokenFile)); got != agent {
		t.Errorf("agent token changed")
	}
	if strings.Contains(out.String(), operator) || strings.Contains(out.String(), link) {
		t.Errorf("the operator token or the first code was printed again:\n%s", out)
	}
	post(t, base+"/v1/calls", agent, `{"tool":"get_time","arguments":{}}`, 200)
	if code := stop(); code != exitOK {
		t.Fatalf("exit code %d", code)
	}
}

func TestServeConfiguredTokens(t *testing.T) {
	data := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "custody.json")
	os.WriteFile(cfg, []byte(`{"tokens":{"operator":["ana:operator-secret-000001"]}}`), 0o600)
	env := map[string]string{"CUSTODY_AGENT_TOKENS": "bot:agent-secret-0000000001"}
	base, _, stop := startServe(t, env, "--data", data, "--config", cfg)
	defer stop()
	post(t, base+"/v1/calls", "agent-secret-0000000001", `{"tool":"get_time","arguments":{}}`, 200)
	res, err := http.NewRequest("GET", base+"/v1/approvals", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Header.Set("Authorization", "Bearer operator-secret-000001")
	got, err := http.DefaultClient.Do(res)
	if err != nil {
		t.Fatal(err)
	}
	got.Body.Close()
	if got.StatusCode != 200 {
		t.Errorf("operator from the config file: %d", got.StatusCode)
	}
	for _, f := range []string{agentTokenFile, operatorTokenFile} {
		if _, err := os.Stat(filepath.Join(data, f)); err == nil {
			t.Errorf("%s was created although tokens are configured", f)
		}
	}
}

func TestServeBadConfig(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "custody.json")
	os.WriteFile(cfg, []byte(`{"adress":"127.0.0.1:1"}`), 0o600)
	var stderr bytes.Buffer
	m := &Main{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &stderr, Getenv: func(string) string { return "" }}
	if code := m.Run(context.Background(), []string{"serve", "--config", cfg}); code != exitUsage {
		t.Fatalf("exit code %d, want %d", code, exitUsage)
	}
	if !strings.Contains(stderr.String(), `"adress"`) {
		t.Errorf("the error does not name the field: %s", stderr.String())
	}
}

func readToken(t *testing.T, path string) string {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("token file: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", path, fi.Mode().Perm())
	}
	raw, _ := os.ReadFile(path)
	return strings.TrimSpace(string(raw))
}

func post(t *testing.T, url, token, body string, want int) string {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		t.Fatalf("POST %s: %d, want %d: %s", url, res.StatusCode, want, b)
	}
	return string(b)
}

func get(t *testing.T, url string) string {
	t.Helper()
	code, b := fetch(t, url, "")
	if code != 200 {
		t.Fatalf("GET %s: %d: %s", url, code, b)
	}
	return b
}

// TestServeSystems checks that serve runs the seed systems it is asked
// for: their pages are mounted for operators, their tools join the envelope, a state change
// on a page needs an operator, and a Brain room is shown when given.
func TestServeSystems(t *testing.T) {
	dir := t.TempDir()
	data, room := filepath.Join(dir, "data"), filepath.Join(dir, "room.db")
	m := &Main{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" }}
	if code := m.Run(context.Background(), []string{"brain", "import", "--room", room, filepath.Join("..", "..", "systems", "brain", "testdata", "example_room.json")}); code != exitOK {
		t.Fatalf("brain import: exit %d", code)
	}
	env := map[string]string{"CUSTODY_AUDITOR_TOKENS": "aud:auditor-secret-0000001"}
	base, _, stop := startServe(t, env, "--data", data, "--room", room, "--systems", "peas,mesh")
	defer stop()
	operator := readToken(t, filepath.Join(data, operatorTokenFile))
	for _, app := range []string{"peas", "mesh", "brain"} {
		if code := getStatus(t, base+"/apps/"+app+"/", operator); code != 200 {
			t.Errorf("/apps/%s/: %d, want 200", app, code)
		}
	}
	agent := readToken(t, filepath.Join(data, agentTokenFile))
	body := getBody(t, base+"/v1/tools", agent)
	for _, tool := range []string{"detect_pileup_signature", "issue_vms_update", "notify_driver", "post_announcement"} {
		if !strings.Contains(body, `"`+tool+`"`) {
			t.Errorf("/v1/tools lacks %s", tool)
		}
	}
	post(t, base+"/apps/peas/api/voice", "auditor-secret-0000001", `{}`, 403)
}

func getStatus(t *testing.T, url, token string) int {
	t.Helper()
	code, _ := fetch(t, url, token)
	return code
}

func getBody(t *testing.T, url, token string) string {
	t.Helper()
	_, b := fetch(t, url, token)
	return b
}

// fetch GETs url, with token as the bearer when set, and returns the
// status and the body.
func fetch(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestServeQuiet checks that serve with no configuration serves the
// example envelope alone and writes nothing that did not happen: no
// simulated feed fills the ledger or the inbox.
func TestServeQuiet(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	base, _, stop := startServe(t, map[string]string{}, "--data", data)
	defer stop()
	agent := readToken(t, filepath.Join(data, agentTokenFile))
	var tools struct {
		Tools []struct{ Name string }
	}
	if err := json.Unmarshal([]byte(getBody(t, base+"/v1/tools", agent)), &tools); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "get_time,write_note,post_announcement" {
		t.Errorf("tools %v, want the example envelope alone", names)
	}
	time.Sleep(1500 * time.Millisecond)
	operator := readToken(t, filepath.Join(data, operatorTokenFile))
	if body := getBody(t, base+"/v1/ledger", operator); !strings.Contains(body, `"entries":[]`) {
		t.Errorf("an idle serve wrote to the ledger: %.300s", body)
	}
	if code := getStatus(t, base+"/apps/peas/", operator); code != 404 {
		t.Errorf("/apps/peas/ without --systems: %d", code)
	}
}

func TestServeUnknownSystem(t *testing.T) {
	var stderr bytes.Buffer
	m := &Main{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &stderr, Getenv: func(string) string { return "" }}
	if code := m.Run(context.Background(), []string{"serve", "--systems", "peas,brainz"}); code != exitUsage || !strings.Contains(stderr.String(), "brainz") {
		t.Errorf("exit %d: %s", code, stderr.String())
	}
}
