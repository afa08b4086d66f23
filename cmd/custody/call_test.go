package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// callOutput is what `custody call` prints.
type callOutput struct {
	Trace   string          `json:"trace_id"`
	Output  json.RawMessage `json:"output"`
	Receipt struct {
		Seq  int64  `json:"seq"`
		Hash string `json:"hash"`
	} `json:"receipt"`
	Error *struct {
		Kind       string            `json:"kind"`
		Message    string            `json:"message"`
		Violations []json.RawMessage `json:"violations"`
		Approval   string            `json:"approval_request_id"`
	} `json:"error"`
}

func decodeCall(t *testing.T, out string) callOutput {
	t.Helper()
	var c callOutput
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("output %q is not JSON: %v", out, err)
	}
	return c
}

func TestCall(t *testing.T) {
	data := t.TempDir()
	tests := []struct {
		name, tool, args string
		code             int
		kind             string
	}{
		{"OK", "get_time", `{"zone":"UTC"}`, exitOK, ""},
		{"ErrExtraField", "get_time", `{"zone":"UTC","x":1}`, exitFailed, "invalid"},
		{"ErrUnknownTool", "rm", `{}`, exitFailed, "denied"},
		{"ErrPending", "post_announcement", `{"channel":"ops","message":"HI"}`, exitPending, "pending_approval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runMain(t, nil, tt.args, "call", "--tool", tt.tool, "--args", "-", "--data", data)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %s", code, tt.code, errOut)
			}
			c := decodeCall(t, out)
			if tt.kind == "" {
				if c.Error != nil || len(c.Output) == 0 || c.Receipt.Seq == 0 || c.Trace == "" {
					t.Fatalf("output = %s", out)
				}
				return
			}
			if c.Error == nil || c.Error.Kind != tt.kind {
				t.Fatalf("output = %s, want error kind %s", out, tt.kind)
			}
			if tt.kind == "invalid" && len(c.Error.Violations) == 0 {
				t.Errorf("no violations in %s", out)
			}
			if tt.kind == "pending_approval" && c.Error.Approval == "" {
				t.Errorf("no approval id in %s", out)
			}
		})
	}
}

func TestCallUsage(t *testing.T) {
	if code, _, _ := runMain(t, nil, "", "call", "--tool", "get_time"); code != exitUsage {
		t.Fatalf("exit %d without --args, want %d", code, exitUsage)
	}
}

func TestApprovalsFlow(t *testing.T) {
	data := t.TempDir()
	post := `{"channel":"ops","message":"HELLO"}`
	code, out, _ := runMain(t, nil, post, "call", "--tool", "post_announcement", "--args", "-", "--trace", "t1", "--data", data)
	if code != exitPending {
		t.Fatalf("exit %d, want pending: %s", code, out)
	}
	id := decodeCall(t, out).Error.Approval

	code, out, _ = runMain(t, nil, "", "approvals", "list", "--status", "pending", "--data", data)
	if code != exitOK || !strings.Contains(out, id) {
		t.Fatalf("list: exit %d, %s", code, out)
	}
	if code, _, _ := runMain(t, nil, "", "approvals", "approve", id, "--data", data); code != exitUsage {
		t.Fatalf("approve without --operator: exit %d, want usage", code)
	}
	code, out, errOut := runMain(t, nil, "", "approvals", "approve", id, "--operator", "op-1", "--set", "message=HELLO WORLD", "--data", data)
	if code != exitOK || !strings.Contains(out, `"status":"approved"`) {
		t.Fatalf("approve: exit %d, %s %s", code, out, errOut)
	}
	code, out, _ = runMain(t, nil, post, "call", "--tool", "post_announcement", "--args", "-", "--trace", "t1", "--data", data)
	if code != exitFailed || decodeCall(t, out).Error.Kind != "denied" {
		t.Fatalf("original arguments after an edit: exit %d, %s", code, out)
	}
	edited := `{"channel":"ops","message":"HELLO WORLD"}`
	code, out, _ = runMain(t, nil, edited, "call", "--tool", "post_announcement", "--args", "-", "--trace", "t1", "--data", data)
	if code != exitOK || !strings.Contains(string(decodeCall(t, out).Output), "HELLO WORLD") {
		t.Fatalf("edited call: exit %d, %s", code, out)
	}
	code, out, _ = runMain(t, nil, "", "approvals", "approve", id, "--operator", "op-1", "--data", data)
	if code != exitFailed || decodeCall(t, out).Error.Kind != "conflict" {
		t.Fatalf("second decision: exit %d, %s", code, out)
	}
	code, out, _ = runMain(t, nil, "", "approvals", "expire", "--data", data)
	if code != exitOK || strings.TrimSpace(out) != `{"expired":0}` {
		t.Fatalf("expire: exit %d, %s", code, out)
	}
}

func TestApprovalsDecline(t *testing.T) {
	data := t.TempDir()
	post := `{"channel":"alerts","message":"FIRE DRILL"}`
	_, out, _ := runMain(t, nil, post, "call", "--tool", "post_announcement", "--args", "-", "--trace", "t2", "--data", data)
	id := decodeCall(t, out).Error.Approval
	if code, out, _ := runMain(t, nil, "", "approvals", "decline", "--operator", "op-2", "--note", "not today", "--data", data, id); code != exitOK {
		t.Fatalf("decline: exit %d, %s", code, out)
	}
	code, out, _ := runMain(t, nil, post, "call", "--tool", "post_announcement", "--args", "-", "--trace", "t2", "--data", data)
	if code != exitFailed || decodeCall(t, out).Error.Kind != "denied" {
		t.Fatalf("declined call: exit %d, %s", code, out)
	}
}

// TestBenchGatewayShort runs the bench for a fixed count of calls: what
// it asserts holds however fast the machine is.
func TestBenchGatewayShort(t *testing.T) {
	if testing.Short() {
		t.Skip("benchmark run skipped in -short mode")
	}
	const calls = 200 // 40 in each of the 5 rounds
	code, out, errOut := runMain(t, nil, "", "bench", "gateway", "--callers", "4", "--calls", strconv.Itoa(calls))
	if code != exitOK {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	if !strings.Contains(out, "4 callers, flat out, 50% writes; 5 rounds per side, 200 calls per side in all ...") {
		t.Errorf("no plan of 200 calls a side in:\n%s", out)
	}
	res := lastBenchResult(t, out)
	if res.CallsPerS <= 0 || res.P99us < res.P50us || res.BaselinePerS <= 0 || res.Ratio <= 0 ||
		res.BaselineP50us <= 0 || res.BaselineP99us < res.BaselineP50us ||
		res.EntriesPerCommit < 1 || res.BaselineRowsPerCommit < 1 {
		t.Fatalf("result = %+v", res)
	}
	// Flat out, there is no disk floor: it is a latency bar.
	if res.FloorP99us != 0 || strings.Contains(out, "disk floor:") {
		t.Errorf("flat out, a disk floor was measured:\n%s", out)
	}
	// The calls split by tool: a call whose number modulo 100 is under 50
	// goes to the WRITE tool, 100 of calls 1 to 200, and appends two
	// entries, a READ call one. The entries counted are the calls' own.
	reads, writes, entries := checkGatewayCalls(t, out, calls)
	if reads != 100 || writes != 100 || entries != 300 {
		t.Errorf("%d READ and %d WRITE calls appended %d entries, want 100, 100 and 300", reads, writes, entries)
	}
	// The p99 of all calls is no lower than the lesser of the tools'.
	if res.ReadP99us <= 0 || res.WriteP99us <= 0 || res.StartP99us <= 0 || res.StartP99us > res.P99us ||
		res.P99us < min(res.ReadP99us, res.WriteP99us) {
		t.Errorf("p99 %d µs, by tool %d / %d µs, from the start %d µs", res.P99us, res.ReadP99us, res.WriteP99us, res.StartP99us)
	}
	// Every acknowledged insert is a committed row.
	if inserts := baselineInserts(t, out); inserts != calls {
		t.Errorf("the baseline made %d inserts, want %d", inserts, calls)
	}
	// The sides take turns, and each round reports both.
	for r := 1; r <= 5; r++ {
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^round %d/5: gateway \d+ calls/s baseline \d+ inserts/s$`, r)).MatchString(out) {
			t.Errorf("no round %d in:\n%s", r, out)
		}
	}

	if res.BaselineSync != "full" {
		t.Errorf("baseline_sync = %q, want full by default", res.BaselineSync)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--rounds", "0"}, "--rounds must be positive"},
		{[]string{"--calls", "4"}, "--calls, when set, must be at least --rounds"},
		{[]string{"--calls", "-1"}, "--calls, when set, must be at least --rounds"},
	} {
		code, _, errOut = runMain(t, nil, "", append([]string{"bench", "gateway"}, tt.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: exit %d, %s", tt.args, code, errOut)
		}
	}
}

// checkGatewayCalls checks the gateway's summary in out: want calls in
// all, each READ or WRITE as its number picks, appending their entries in
// commits of at least one entry. It returns the READ and WRITE calls and
// the entries.
func checkGatewayCalls(t *testing.T, out string, want int) (reads, writes, entries int) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^gateway: (\d+) calls, .*; (\d+) entries in (\d+) commits, [\d.]+ per commit$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no gateway summary in:\n%s", out)
	}
	calls, entries, commits := atoi(t, m[1]), atoi(t, m[2]), atoi(t, m[3])
	if calls != want || commits < 1 || commits > entries {
		t.Errorf("%d calls appended %d entries in %d commits, want %d calls", calls, entries, commits, want)
	}
	if strings.Contains(out, "READ calls") {
		reads = toolLine(t, out, "READ")
	}
	if strings.Contains(out, "WRITE calls") {
		writes = toolLine(t, out, "WRITE")
	}
	if reads+writes != calls {
		t.Errorf("%d READ and %d WRITE calls of %d", reads, writes, calls)
	}
	if entries != reads+2*writes {
		t.Errorf("%d READ and %d WRITE calls appended %d entries, want %d", reads, writes, entries, reads+2*writes)
	}
	return reads, writes, entries
}

// baselineInserts returns the inserts the baseline's summary in out
// counts, checking that each is a committed row.
func baselineInserts(t *testing.T, out string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^baseline: (\d+) inserts, .*; (\d+) rows in \d+ commits, [\d.]+ per commit$`).FindStringSubmatch(out)
	if m == nil || m[1] != m[2] {
		t.Fatalf("baseline rows are not its inserts in:\n%s", out)
	}
	return atoi(t, m[1])
}

func TestBenchGatewayPipelinedBaseline(t *testing.T) {
	if testing.Short() {
		t.Skip("benchmark run skipped in -short mode")
	}
	code, out, errOut := runMain(t, nil, "", "bench", "gateway", "--callers", "4", "--calls", "40", "--rounds", "1", "--baseline-sync", "pipelined")
	if code != exitOK {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	if res := lastBenchResult(t, out); res.BaselineSync != "pipelined" || res.BaselinePerS <= 0 {
		t.Fatalf("result = %+v", res)
	}
	if inserts := baselineInserts(t, out); inserts != 40 {
		t.Errorf("the baseline made %d inserts, want 40", inserts)
	}

	code, _, errOut = runMain(t, nil, "", "bench", "gateway", "--baseline-sync", "never")
	if code != exitUsage || !strings.Contains(errOut, `--baseline-sync "never": want full or pipelined`) {
		t.Errorf("--baseline-sync never: exit %d, %s", code, errOut)
	}
}

// TestBenchGatewayPaced runs the paced bench for a fixed count of calls.
// Paced, no side makes more than rate calls a second, however fast the
// machine; a loaded one may fall behind, which is not asserted against.
func TestBenchGatewayPaced(t *testing.T) {
	if testing.Short() {
		t.Skip("benchmark run skipped in -short mode")
	}
	const calls, rounds, rate = 100, 5, 200
	code, out, errOut := runMain(t, nil, "", "bench", "gateway", "--callers", "4", "--calls", strconv.Itoa(calls), "--rate", strconv.Itoa(rate))
	if code != exitOK {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	if !strings.Contains(out, "harness: a paced call that does nothing") {
		t.Errorf("no harness floor in:\n%s", out)
	}
	res := lastBenchResult(t, out)
	reads, writes, _ := checkGatewayCalls(t, out, calls)
	if inserts := baselineInserts(t, out); inserts != calls {
		t.Errorf("the baseline made %d inserts, want %d", inserts, calls)
	}
	// Paced, the disk floor takes its turns beside the other two. Its
	// calls append a block for each entry the gateway's calls append.
	m := regexp.MustCompile(`(?m)^disk floor: (\d+) calls, .*; (\d+) appends in (\d+) fsyncs`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no disk floor summary in:\n%s", out)
	}
	floorCalls, appends, fsyncs := atoi(t, m[1]), atoi(t, m[2]), atoi(t, m[3])
	if floorCalls != calls || appends != reads+2*writes || fsyncs < 1 || fsyncs > appends {
		t.Errorf("disk floor: %d calls made %d appends in %d fsyncs; want %d calls making %d", floorCalls, appends, fsyncs, calls, reads+2*writes)
	}
	if res.FloorP50us <= 0 || res.FloorP99us < res.FloorP50us {
		t.Errorf("disk floor p50 %d µs, p99 %d µs", res.FloorP50us, res.FloorP99us)
	}
	// Latency from the schedule holds the wait for it; from the call's
	// start it does not.
	if res.StartP99us <= 0 || res.StartP99us > res.P99us {
		t.Errorf("p99 from the start %d µs, from the schedule %d µs", res.StartP99us, res.P99us)
	}
	// A turn of n calls lasts at least until its last is due, n-1
	// intervals in: no more than rate·n/(n-1) a second, rounded.
	n := float64(calls / rounds)
	ceiling := rate*n/(n-1) + 0.5
	for name, v := range map[string]float64{"gateway": res.CallsPerS, "baseline": res.BaselinePerS} {
		if v <= 0 || v > ceiling {
			t.Errorf("%s ran %.0f calls/s, want some and at most %.1f", name, v, ceiling)
		}
	}
}

func TestBenchGatewayCPUProfile(t *testing.T) {
	if testing.Short() {
		t.Skip("benchmark run skipped in -short mode")
	}
	prof := filepath.Join(t.TempDir(), "cpu.prof")
	code, out, errOut := runMain(t, nil, "", "bench", "gateway", "--callers", "2", "--calls", "20", "--baseline=false", "--cpuprofile", prof)
	if code != exitOK {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	// A CPU profile is a gzipped protocol buffer.
	b, err := os.ReadFile(prof)
	if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("profile: %d bytes, %v", len(b), err)
	}

	code, _, errOut = runMain(t, nil, "", "bench", "gateway", "--calls", "10", "--cpuprofile", filepath.Join(t.TempDir(), "no", "such", "dir", "cpu.prof"))
	if code != exitFailed || !strings.Contains(errOut, "cpu profile") {
		t.Fatalf("unwritable profile: exit %d, %s", code, errOut)
	}
}

func TestBenchGatewayReadOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("benchmark run skipped in -short mode")
	}
	code, out, errOut := runMain(t, nil, "", "bench", "gateway", "--callers", "2", "--calls", "20", "--rounds", "2", "--writes", "0", "--baseline=false")
	if code != exitOK {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	res := lastBenchResult(t, out)
	if strings.Contains(out, "WRITE calls") || res.WriteP99us != 0 || res.ReadP99us != res.P99us {
		t.Errorf("no WRITE calls made, yet:\n%s", out)
	}
	if reads, _, entries := checkGatewayCalls(t, out, 20); reads != 20 || entries != 20 {
		t.Errorf("%d READ calls appended %d entries, want 20 and 20", reads, entries)
	}
}

// toolLine returns the count of calls the summary line of tool gives.
func toolLine(t *testing.T, out, tool string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^  ` + tool + ` calls: (\d+), p50 \d+ µs, p99 \d+ µs$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no %s summary in:\n%s", tool, out)
	}
	return atoi(t, m[1])
}

// lastBenchResult decodes the JSON object bench gateway prints last.
func lastBenchResult(t *testing.T, out string) benchResult {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var res benchResult
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("last line %q is not the result JSON: %v", lines[len(lines)-1], err)
	}
	return res
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A data directory that cannot hold a store is reported as the store
// being unavailable, with the reason, not as an internal error.
func TestStoreThatCannotOpen(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runMain(t, nil, "{}", "call", "--tool", "get_time", "--args", "-", "--data", file)
	want := "custody: unavailable: cannot open the store in " + file + ": create data directory: "
	if code != exitFailed || !strings.HasPrefix(errOut, want) || !strings.Contains(errOut, "not a directory") {
		t.Fatalf("exit %d, stderr %q; want %q… not a directory", code, errOut, want)
	}
}
