package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/store/postgres/pgtest"
)

// Phases of the server under a restart test.
const (
	pgUp       = iota // before the stop
	pgStopping        // pg_ctl stop running
	pgDown            // stopped
	pgStarting        // pg_ctl start running
	pgBack            // started again
)

// callBound is the longest any call may take, the server down or not.
const callBound = 10 * time.Second

// restartLoad drives calls at serve while the test moves its server
// through the phases, and sorts the answers by phase.
type restartLoad struct {
	base   string
	client *http.Client
	phase  atomic.Int64
	acked  receipts

	mu sync.Mutex
	// down counts the calls made and answered while the server was
	// down, downOK those of them that succeeded; downMax is the longest
	// any of them took.
	down, downOK int
	downMax      time.Duration
	// back counts, by tool, the calls that succeeded after it came back.
	back map[string]int
	// failures holds the answers that were neither a receipt nor
	// unavailable.
	failures []string
}

// The calls restartLoad makes, in turn: a READ and a WRITE.
var restartTools = []struct{ name, call string }{
	{"get_time", `"tool":"get_time","arguments":{"zone":"UTC"}`},
	{"write_note", `"tool":"write_note","arguments":{"title":"t","text":"a note"}`},
}

// drive calls until ctx ends.
func (l *restartLoad) drive(ctx context.Context, g int) {
	for n := 0; ctx.Err() == nil; n++ {
		tool := n % len(restartTools)
		before := l.phase.Load()
		start := time.Now()
		code, body, err := l.post(fmt.Sprintf(`{"trace_id":"restart-%d",%s}`, g, restartTools[tool].call))
		l.record(before, l.phase.Load(), tool, time.Since(start), code, body, err)
		if code != 200 {
			time.Sleep(10 * time.Millisecond) // no busy loop while the server is down
		}
	}
}

// post makes one call, bounded by callBound.
func (l *restartLoad) post(body string) (int, string, error) {
	req, err := http.NewRequest("POST", l.base+"/v1/calls", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+pgAgentToken)
	req.Header.Set("Content-Type", "application/json")
	res, err := l.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, string(b), err
}

// record sorts one answer: a receipt is kept wherever it came; a refusal
// must say unavailable; a call made and answered while the server was
// down must be refused.
func (l *restartLoad) record(before, after int64, tool int, took time.Duration, code int, body string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if before == pgDown && after == pgDown {
		l.down++
		l.downMax = max(l.downMax, took)
		if code == 200 {
			l.downOK++
		}
	}
	switch {
	case err != nil:
		l.failures = append(l.failures, fmt.Sprintf("after %v: %v", took.Round(time.Millisecond), err))
	case code == 200:
		if err := l.acked.add(body); err != nil {
			l.failures = append(l.failures, err.Error())
		}
		if before == pgBack {
			l.back[restartTools[tool].name]++
		}
	case code != 503 || errorKind(body) != custody.EUNAVAILABLE:
		l.failures = append(l.failures, fmt.Sprintf("answered %d: %s", code, body))
	}
}

// errorKind returns the kind of a refusal's body.
func errorKind(body string) string {
	var res struct {
		Error custody.ErrorDetail `json:"error"`
	}
	_ = json.Unmarshal([]byte(body), &res)
	return res.Error.Kind
}

// counts returns the calls answered while down, those that succeeded,
// and the least number of successes of any tool since the server came
// back.
func (l *restartLoad) counts() (down, downOK, backMin int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	backMin = -1
	for _, tool := range restartTools {
		if backMin < 0 || l.back[tool.name] < backMin {
			backMin = l.back[tool.name]
		}
	}
	return l.down, l.downOK, backMin
}

// within polls cond until it holds or d passes.
func within(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// TestServePostgresRestart stops the PostgreSQL server under a serve
// instance driven with READ and WRITE calls, as a crash would and as a
// clean shutdown does, and starts it again: while the server is down
// every call fails closed as unavailable, promptly; once it is back calls
// succeed again without restarting serve; and every receipt acknowledged
// before, during and after is on the chain, which verifies. The server is
// a cluster of the test's own: the shared one is never stopped.
func TestServePostgresRestart(t *testing.T) {
	pgtest.Require(t)
	for _, mode := range []string{pgtest.Immediate, pgtest.Fast} {
		t.Run(mode, func(t *testing.T) { restartUnderLoad(t, mode) })
	}
}

// restartUnderLoad is TestServePostgresRestart with the server stopped
// in mode.
func restartUnderLoad(t *testing.T, mode string) {
	cluster, dir := pgtest.NewCluster(t), t.TempDir()
	env := scaledEnv(cluster.URL, dir)
	base, _, stop := startServe(t, env, "--data", filepath.Join(dir, "data"), "--store", cluster.URL)
	load := &restartLoad{base: base, client: &http.Client{Timeout: callBound}, back: map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() { load.drive(ctx, g) })
	}
	defer func() { cancel(); wg.Wait() }()
	if !within(10*time.Second, func() bool { return load.acked.len() >= 20 }) {
		t.Fatal("no calls were acknowledged before the stop")
	}

	load.phase.Store(pgStopping)
	cluster.Stop(mode)
	load.phase.Store(pgDown)
	if !within(20*time.Second, func() bool { down, _, _ := load.counts(); return down >= 20 }) {
		t.Fatal("too few calls were answered while the server was down")
	}
	load.phase.Store(pgStarting)
	cluster.Start()
	load.phase.Store(pgBack)
	if !within(15*time.Second, func() bool { _, _, back := load.counts(); return back >= 10 }) {
		t.Fatalf("calls did not succeed again within 15s of the restart: %v", load.back)
	}
	cancel()
	wg.Wait()
	if code := stop(); code != exitOK {
		t.Fatalf("serve exit code %d", code)
	}

	down, downOK, _ := load.counts()
	if downOK != 0 {
		t.Fatalf("%d of %d calls made while the server was down succeeded", downOK, down)
	}
	if len(load.failures) > 0 {
		t.Fatalf("%d calls neither succeeded nor failed as unavailable, the first: %s", len(load.failures), load.failures[0])
	}
	if code, out, errOut := cli(t, "", "ledger", "verify", "--store", cluster.URL); code != exitOK || !strings.HasPrefix(out, "ok: ") {
		t.Fatalf("ledger verify: exit %d: %s%s", code, out, errOut)
	}
	checkScaledLedger(t, cluster.URL, 0, load.acked.list)
	t.Logf("%d calls answered while the server was down, all unavailable, the slowest in %v; after it came back %v succeeded",
		down, load.downMax.Round(time.Millisecond), load.back)
}
