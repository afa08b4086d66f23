package gate_test

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/gate"
)

var long = flag.Bool("long", false, "run the crash tests with more trials")

// Environment of a crash child: the test binary run again to play one
// side of a crash test until it is killed.
const (
	envCrashChild = "CUSTODY_CRASH_CHILD" // "decide" or "write"
	envCrashDir   = "CUSTODY_CRASH_DIR"
)

// crashTrials is how many times a crash test kills its child.
func crashTrials() int {
	if *long {
		return 50
	}
	return 10
}

// TestCrashChild is the child of the crash tests; it runs only when a
// crash test starts it.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(envCrashDir)
	switch os.Getenv(envCrashChild) {
	case "decide":
		crashDecide(t, dir)
	case "write":
		crashWrite(t, dir)
	default:
		t.Skip("runs only as the child of a crash test")
	}
}

// crashDecide decides every pending approval from 8 deciders, printing
// "decided <id> <decision>" once each decision is acknowledged, until it
// is killed.
func crashDecide(t *testing.T, dir string) {
	h := newHarnessIn(t, dir)
	ctx := context.Background()
	pending, err := h.svc.List(ctx, custody.ApprovalPending)
	if err != nil {
		t.Fatal(err)
	}
	out := &lineWriter{w: os.Stdout}
	out.printf("ready")
	var wg sync.WaitGroup
	for d := range 8 {
		wg.Go(func() {
			for i := d; i < len(pending); i += 8 {
				decision := approval.Approve
				if i%3 == 0 {
					decision = approval.Decline
				}
				id := pending[i].ID
				if _, err := h.svc.Decide(ctx, id, approval.Decision{Decision: decision, Operator: fmt.Sprint("op-", d)}); err != nil {
					out.printf("error %s %v", id, err)
					continue
				}
				out.printf("decided %s %s", id, decision)
			}
		})
	}
	wg.Wait()
	select {} // wait to be killed
}

// crashWrite makes WRITE calls from 32 callers, each in a trace of its
// own; the tool notes each run in runs.log before it answers, and the
// child prints "ok <seq> <hash>" once a call's receipt is acknowledged,
// until it is killed.
func crashWrite(t *testing.T, dir string) {
	h := newHarnessIn(t, dir)
	runs, err := os.OpenFile(filepath.Join(dir, "runs.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	logged := &lineWriter{w: runs}
	tool := gate.Tool{Spec: spec("crash_write", custody.Write), Handler: func(_ context.Context, c custody.Call) (json.RawMessage, error) {
		logged.printf("%s", c.Trace)
		return json.RawMessage(`{"ok":true}`), nil
	}}
	gw, err := gate.New(gate.Config{Registry: h.reg, Ledger: h.db, Approvals: h.svc, State: h.db, Logger: discard()},
		"crash", []gate.Tool{tool})
	if err != nil {
		t.Fatal(err)
	}
	approved, err := h.svc.List(context.Background(), custody.ApprovalApproved)
	if err != nil {
		t.Fatal(err)
	}
	out := &lineWriter{w: os.Stdout}
	out.printf("ready")
	for c := range 8 {
		// Approved actions, used as the writes go on.
		go func() {
			for i := c; i < len(approved); i += 8 {
				if _, err := h.call(approved[i].Trace, "post_announcement", string(approved[i].Arguments)); err != nil {
					out.printf("error %v", err)
				}
			}
		}()
	}
	for c := range 32 {
		go func() {
			for i := 0; ; i++ {
				res, err := gw.Call(context.Background(), custody.Call{Trace: fmt.Sprintf("w-%d-%d", c, i), Tool: "crash_write",
					Args: json.RawMessage(`{"n":1}`), Actor: "agent-1", Via: "test"})
				if err != nil {
					out.printf("error %v", err)
					continue
				}
				out.printf("ok %d %s", res.Receipt.Seq, res.Receipt.Hash)
			}
		}()
	}
	select {} // wait to be killed
}

// lineWriter writes whole lines from many goroutines.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, format+"\n", args...)
}

// runChild starts the crash child of the given kind on dir, kills it with
// SIGKILL at a random time within window after it is ready, and returns
// the lines it printed. With acked set, the window opens once the child
// has printed a line beginning with it instead: that trial kills a child
// that has acknowledged something, however slow the machine.
func runChild(t *testing.T, kind, dir string, window [2]time.Duration, rng *rand.Rand, acked string) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), envCrashChild+"="+kind, envCrashDir+"="+dir)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1<<16)
	ready, first := make(chan struct{}), make(chan struct{})
	if acked == "" {
		close(first)
	}
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "ready" {
				close(ready)
				continue
			}
			if acked != "" && strings.HasPrefix(sc.Text(), acked) {
				close(first)
				acked = ""
			}
			lines <- sc.Text()
		}
	}()
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the child did not get ready")
	}
	select {
	case <-first:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the child acknowledged nothing")
	}
	time.Sleep(window[0] + time.Duration(rng.Int64N(int64(window[1]-window[0]))))
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var out []string
	for l := range lines {
		out = append(out, l)
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the child ended with %v, want killed", err)
	}
	return out
}

// firstTrial returns acked for trial 0, "" for the others: the first
// trial of a crash test waits for the child to acknowledge something
// before the kill, so that the test tests something at any speed.
func firstTrial(trial int, acked string) string {
	if trial == 0 {
		return acked
	}
	return ""
}

// decideWindow is when the decisions child is killed: 300 decisions take
// tens of milliseconds here, so that most kills land amid them.
var decideWindow = [2]time.Duration{2 * time.Millisecond, 80 * time.Millisecond}

// TestCrashDuringDecisions kills a process deciding 300 pending approvals
// from 8 deciders, again and again, and checks after each crash that no
// decision is in the store without its approval.decided entry, and that
// every acknowledged decision survived.
func TestCrashDuringDecisions(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes")
	}
	template := t.TempDir()
	h := newHarnessIn(t, template)
	var wg sync.WaitGroup
	for w := range 10 {
		wg.Go(func() {
			for i := w; i < 300; i += 10 {
				// An action of its own for each: one approval serves every
				// trace of its agent.
				args := fmt.Sprintf(`{"message":"DEPLOY AT %d","channel":"ops"}`, i)
				if _, err := h.call(fmt.Sprint("trace-", i), "post_announcement", args); custody.ErrorKind(err) != custody.EPENDING {
					t.Errorf("held call %d: %v", i, err)
				}
			}
		})
	}
	wg.Wait()
	if err := h.db.Close(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	decided, withEntry := 0, 0
	for trial := range crashTrials() {
		dir := privateDir(t)
		copyFiles(t, template, dir, "custody.db", "signing.key", "signing.pub")
		acked := map[string]string{}
		// The first trial kills a child that has decided something.
		for _, l := range runChild(t, "decide", dir, decideWindow, rng, firstTrial(trial, "decided ")) {
			if f := strings.Fields(l); len(f) == 3 && f[0] == "decided" {
				acked[f[1]] = f[2]
			}
		}
		d, e := checkDecisions(t, dir, acked)
		t.Logf("trial %d: %d decisions acknowledged, %d decided in the store, %d with their entry", trial, len(acked), d, e)
		decided, withEntry = decided+d, withEntry+e
	}
	if decided == 0 {
		t.Fatal("no decision was made before a crash: the test tested nothing")
	}
	t.Logf("%d trials: %d decisions in the store, %d with their entry", crashTrials(), decided, withEntry)
}

// checkDecisions opens the crashed store and checks its decisions against
// the ledger and the acknowledged ones; it returns how many approvals are
// decided and how many decisions are on the ledger.
func checkDecisions(t *testing.T, dir string, acked map[string]string) (decided, onLedger int) {
	t.Helper()
	h := newHarnessIn(t, dir)
	defer h.db.Close()
	h.verify(t)
	ctx := context.Background()
	entries := map[string]string{}
	for after := int64(0); ; {
		es, err := h.db.Entries(ctx, custody.Query{Kind: custody.KindApprovalDecided, After: after})
		if err != nil {
			t.Fatal(err)
		}
		if len(es) == 0 {
			break
		}
		for _, e := range es {
			var b struct{ Decision string }
			_ = json.Unmarshal(e.Body, &b)
			id := e.Refs[approval.RefApproval]
			if _, dup := entries[id]; dup {
				t.Errorf("approval %s is decided twice on the ledger", id)
			}
			entries[id] = b.Decision
			after = e.Seq
		}
	}
	all, err := h.svc.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range all {
		if a.Status == custody.ApprovalPending {
			if _, ok := entries[a.ID]; ok {
				t.Errorf("approval %s is pending but decided on the ledger", a.ID)
			}
			continue
		}
		decided++
		if entries[a.ID] != string(a.Status) {
			t.Errorf("approval %s is %s in the store, but the ledger says %q", a.ID, a.Status, entries[a.ID])
			continue
		}
		onLedger++
	}
	for id, d := range acked {
		if entries[id] != d {
			t.Errorf("acknowledged decision %s %s is lost: the ledger says %q", id, d, entries[id])
		}
	}
	return decided, onLedger
}

// TestCrashDuringWrites kills a process making WRITE calls from 32
// callers and approved calls from 8, again and again, and checks after
// each crash that every run of the tool has its call.started entry, every
// used approval the call.started that used it, and every acknowledged
// receipt is on the ledger.
func TestCrashDuringWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes")
	}
	template := t.TempDir()
	h := newHarnessIn(t, template)
	for i := range 300 {
		// An action of its own for each trace: an approval serves every
		// trace of its agent, so one action would be approved once.
		id := h.pending(t, fmt.Sprint("trace-", i), "post_announcement", fmt.Sprintf(`{"message":"DEPLOY AT %d","channel":"ops"}`, i))
		h.decide(t, id, approval.Approve, nil)
	}
	if err := h.db.Close(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	acked, ran := 0, 0
	for trial := range crashTrials() {
		dir := privateDir(t)
		copyFiles(t, template, dir, "custody.db", "signing.key", "signing.pub")
		// The first trial kills a child that has acknowledged a call.
		lines := runChild(t, "write", dir, [2]time.Duration{150 * time.Millisecond, 600 * time.Millisecond}, rng, firstTrial(trial, "ok "))
		a, r, u := checkWrites(t, dir, lines)
		t.Logf("trial %d: %d receipts acknowledged, %d runs, %d approvals used", trial, a, r, u)
		acked, ran = acked+a, ran+r
	}
	if acked == 0 || ran == 0 {
		t.Fatal("no call was acknowledged before a crash: the test tested nothing")
	}
	t.Logf("%d trials: %d receipts acknowledged, %d runs, none lost", crashTrials(), acked, ran)
}

func checkWrites(t *testing.T, dir string, lines []string) (acked, ran, usedApprovals int) {
	t.Helper()
	h := newHarnessIn(t, dir)
	defer h.db.Close()
	h.verify(t)
	ctx := context.Background()
	started := map[string]bool{}
	byHash := map[int64]string{}
	startedAt := map[int64]custody.Entry{}
	for after := int64(0); ; {
		es, err := h.db.Entries(ctx, custody.Query{After: after})
		if err != nil {
			t.Fatal(err)
		}
		if len(es) == 0 {
			break
		}
		for _, e := range es {
			byHash[e.Seq] = e.Hash
			if e.Kind == custody.KindCallStarted {
				started[e.Trace] = true
				startedAt[e.Seq] = e
			}
			after = e.Seq
		}
	}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 3 || f[0] != "ok" {
			continue
		}
		acked++
		seq, _ := strconv.ParseInt(f[1], 10, 64)
		if byHash[seq] != f[2] {
			t.Errorf("acknowledged receipt %d %s is lost: the ledger has %q", seq, f[2], byHash[seq])
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, "runs.log"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	used, err := h.svc.List(ctx, custody.ApprovalConsumed)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range used {
		if e, ok := startedAt[a.ConsumedSeq]; !ok || e.Trace != a.Trace || e.Refs[approval.RefApproval] != a.ID {
			t.Errorf("approval %s was used by seq %d, which is not its call.started: %+v", a.ID, a.ConsumedSeq, e)
		}
	}
	for _, trace := range strings.Fields(string(raw)) {
		ran++
		if !started[trace] {
			t.Errorf("the tool ran in trace %s without its call.started entry", trace)
		}
	}
	return acked, ran, len(used)
}
