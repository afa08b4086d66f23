package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/store/sqlite"
)

// conformanceSpec is the protocol version the suite tests, as in the
// go-sdk's scripts/server-conformance.sh.
const conformanceSpec = "2025-11-25"

// conformanceTools are the everything-server's tools (go-sdk v1.8.0)
// that change its state: they add or remove a tool or prompt. Every
// other tool only reads or asks the client.
var conformanceTools = []string{"test_trigger_tool_change", "test_trigger_prompt_change"}

// conformancePrograms returns the suite's command and the everything-server
// that .ci/conformance.sh installs and builds. Without them the test
// skips, except under CI (CI=true), where it fails: CI must never report
// an agreement it did not check.
func conformancePrograms(t *testing.T) (suite, server string) {
	t.Helper()
	suite, server = os.Getenv("CUSTODY_TEST_CONFORMANCE"), os.Getenv("CUSTODY_TEST_EVERYTHING_SERVER")
	missing := ""
	switch {
	case suite == "":
		missing = "CUSTODY_TEST_CONFORMANCE is unset: no MCP conformance suite (.ci/conformance.sh installs it)"
	case server == "":
		missing = "CUSTODY_TEST_EVERYTHING_SERVER is unset: no go-sdk everything-server (.ci/conformance.sh builds it)"
	}
	for _, p := range []string{suite, server} {
		if _, err := os.Stat(p); missing == "" && err != nil {
			missing = err.Error()
		}
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s, and CI=true: CI runs every conformance check", missing)
		}
		t.Skip(missing)
	}
	return suite, server
}

// TestConformance runs the server scenarios of the official MCP
// conformance suite (@modelcontextprotocol/conformance) twice: against
// the go-sdk's conformance everything-server directly, then against
// custody serve fronting the same server over stdio. Every check that
// passes directly must pass through custody: a gateway may refuse what
// its policy refuses, but it must not break the protocol for what it lets
// through.
func TestConformance(t *testing.T) {
	suite, server := conformancePrograms(t)
	dir := t.TempDir()

	start := time.Now()
	direct := runConformance(t, suite, startConformanceServer(t, server), filepath.Join(dir, "direct"))
	t.Logf("directly: %d checks in %s", len(direct), time.Since(start).Round(time.Millisecond))
	passed := passing(direct)
	if len(passed) == 0 {
		t.Fatal("no check passed against the everything-server directly")
	}

	base, _, stop := startServe(t, upstreamEnv(), "--data", filepath.Join(dir, "data"),
		"--config", conformanceConfig(t, dir, server))
	defer stop()
	start = time.Now()
	through := runConformance(t, suite, bearerProxy(t, base, upAgent)+"/mcp", filepath.Join(dir, "custody"))
	t.Logf("through custody: %d checks in %s", len(through), time.Since(start).Round(time.Millisecond))

	var broken []string
	for _, key := range passed {
		if c, ok := through[key]; !ok {
			broken = append(broken, key+": not reported through custody; "+scenarioFailures(through, key))
		} else if c.Status != "SUCCESS" {
			broken = append(broken, fmt.Sprintf("%s: %s: %s", key, c.Status, c.message()))
		}
	}
	t.Logf("%d of %d checks that pass directly pass through custody", len(passed)-len(broken), len(passed))
	if len(broken) > 0 {
		t.Errorf("%d checks pass directly but not through custody:\n%s", len(broken), strings.Join(broken, "\n"))
	}
	checkConformanceLedger(t, filepath.Join(dir, "data"))
}

// checkConformanceLedger checks that what crossed custody in the suite's
// run is on the ledger: tool calls, reads, gets, completions and the
// server's requests of the client, each ended with an entry, and the
// user's elicitation answers only as digests.
func checkConformanceLedger(t *testing.T, data string) {
	t.Helper()
	db, err := sqlite.Open(context.Background(), data, sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	es, err := db.Entries(context.Background(), custody.Query{Kind: custody.KindCallSucceeded})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, e := range es {
		var body struct {
			Tool string `json:"tool"`
		}
		json.Unmarshal(e.Body, &body)
		route, _, _ := strings.Cut(body.Tool, ":")
		seen[route]++
		if route == "client/elicitation" && strings.Contains(string(e.Body), `"content"`) {
			t.Errorf("an elicitation entry holds the answer's content: %s", e.Body)
		}
	}
	for _, route := range []string{"test_simple_text", "test_tool_with_progress", "resources/read", "prompts/get",
		"completion/complete", "client/sampling", "client/elicitation"} {
		if seen[route] == 0 {
			t.Errorf("no call.succeeded entry of %s on the ledger (succeeded: %v)", route, seen)
		}
	}
}

// startConformanceServer runs the everything-server over stateful
// streamable HTTP, as scripts/server-conformance.sh does, and returns its
// URL.
func startConformanceServer(t *testing.T, bin string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, fmt.Sprintf("-http=localhost:%d", port), "-stateless=false")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := fmt.Sprintf("localhost:%d", port)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return "http://" + addr
		}
		if time.Now().After(deadline) {
			t.Fatal("the everything-server did not listen")
		}
	}
}

// conformanceConfig writes the configuration of a custody that fronts the
// everything-server over stdio under its own names (prefix ""), governs
// all it offers and lets it ask for sampling and elicitation, and returns
// its path.
func conformanceConfig(t *testing.T, dir, server string) string {
	t.Helper()
	entry := map[string]any{"command": server, "prefix": "", "clientFeatures": []string{"sampling", "elicitation"}}
	// Globs govern the tools whatever their exposed names, with or
	// without the server's prefix.
	tools := map[string]any{"*": map[string]any{"access": "READ", "effect": "NONE"}}
	for _, name := range conformanceTools {
		tools["*"+name] = map[string]any{"access": "WRITE", "effect": "REVERSIBLE"}
	}
	raw, _ := json.Marshal(map[string]any{
		"mcpServers": map[string]any{"everything": entry},
		"tools":      tools,
		"resources":  map[string]any{"*": map[string]any{"access": "READ"}},
		"prompts":    map[string]any{"*": map[string]any{}},
	})
	p := filepath.Join(dir, "custody.json")
	if err := os.WriteFile(p, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// bearerProxy serves a loopback reverse proxy to base that adds the
// agent's bearer token, which the suite's client cannot send, and passes
// everything else on as sent (the Host and Origin headers included, which
// the DNS rebinding checks are about). It returns the proxy's URL.
func bearerProxy(t *testing.T, base, token string) string {
	t.Helper()
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host
		r.Out.Header.Set("Authorization", "Bearer "+token)
	}, ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) {
		// The suite drops streams it is done with; that is no finding.
		w.WriteHeader(http.StatusBadGateway)
	}}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	return srv.URL
}

// conformanceCheck is one check of the suite's checks.json.
type conformanceCheck struct {
	ID           string          `json:"id"`
	Status       string          `json:"status"` // SUCCESS, FAILURE, WARNING, SKIPPED or INFO
	Description  string          `json:"description"`
	ErrorMessage string          `json:"errorMessage"`
	Details      json.RawMessage `json:"details"`
}

// message returns the check's error message or, without one, its
// details, cut short: some messages list every tool.
func (c conformanceCheck) message() string {
	if c.ErrorMessage != "" {
		return fmt.Sprintf("%.300s", c.ErrorMessage)
	}
	var details bytes.Buffer
	json.Compact(&details, c.Details)
	return fmt.Sprintf("%s (details %.300s)", c.Description, details.String())
}

// scenarioFailures says what failed in the scenario of key instead: a
// scenario that fails early reports one general check in place of its
// others.
func scenarioFailures(checks map[string]conformanceCheck, key string) string {
	scenario, _, _ := strings.Cut(key, "/")
	var failed []string
	for _, k := range slices.Sorted(maps.Keys(checks)) {
		if c := checks[k]; strings.HasPrefix(k, scenario+"/") && c.Status != "SUCCESS" && c.Status != "INFO" {
			failed = append(failed, fmt.Sprintf("%s %s: %s", strings.TrimPrefix(k, scenario+"/"), c.Status, c.message()))
		}
	}
	if len(failed) == 0 {
		return "the scenario reported no failure"
	}
	return "the scenario reported " + strings.Join(failed, "; ")
}

// resultDir is a folder the suite writes per scenario: server-SCENARIO-TIME.
var resultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$`)

// runFailure is the line the suite prints for a scenario that throws.
var runFailure = regexp.MustCompile(`(?m)^Failed to run scenario (\S+): (.*)$`)

// runConformance runs every server scenario of the suite (pending ones
// too) against url and returns the checks by SCENARIO/ID. A check id the
// scenario reports more than once counts as passing only when every
// report passes.
func runConformance(t *testing.T, suite, url, out string) map[string]conformanceCheck {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), suite, "server", "--url", url,
		"--spec-version", conformanceSpec, "--suite", "all", "--output-dir", out)
	cmd.Dir = t.TempDir()
	output, err := cmd.CombinedOutput()
	// The suite exits 1 when a check fails; that is for the caller to judge.
	if exit := (*exec.ExitError)(nil); err != nil && !errors.As(err, &exit) {
		t.Fatalf("run the conformance suite: %v", err)
	}
	entries, _ := os.ReadDir(out)
	checks := map[string]conformanceCheck{}
	for _, e := range entries {
		m := resultDir.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(out, e.Name(), "checks.json"))
		if err != nil {
			t.Fatal(err)
		}
		var list []conformanceCheck
		if err := json.Unmarshal(raw, &list); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		for _, c := range list {
			key := m[1] + "/" + c.ID
			if prev, ok := checks[key]; !ok || prev.Status == "SUCCESS" {
				checks[key] = c
			}
		}
	}
	// A scenario that throws saves no results; the suite prints why.
	for _, m := range runFailure.FindAllStringSubmatch(string(output), -1) {
		checks[m[1]+"/run"] = conformanceCheck{ID: "run", Status: "FAILURE", ErrorMessage: m[2]}
	}
	if len(checks) == 0 {
		t.Fatalf("the conformance suite reported no checks against %s:\n%s", url, output)
	}
	return checks
}

// passing returns the keys of the checks that passed, sorted.
func passing(checks map[string]conformanceCheck) []string {
	var keys []string
	for k, c := range checks {
		if c.Status == "SUCCESS" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
