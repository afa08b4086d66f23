package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/store/postgres"
	"github.com/custody-dev/custody/store/postgres/pgtest"
)

// envServeChild makes TestServeChild run custody serve in its data
// directory, with the environment its parent gives it.
const envServeChild = "CUSTODY_TEST_SERVE_CHILD"

// TestServeChild is custody serve in a process of its own, for the tests
// that kill one.
func TestServeChild(t *testing.T) {
	dir := os.Getenv(envServeChild)
	if dir == "" {
		t.Skip("runs only as the child of a test that kills serve")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	m := NewMain()
	if code := m.Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", dir}); code != exitOK {
		t.Fatalf("serve exited %d", code)
	}
}

// child is a custody serve process.
type child struct {
	cmd  *exec.Cmd
	base string
	done chan error
}

// startChild starts custody serve in a process of its own on dir with
// env, and returns once it listens.
func startChild(t *testing.T, dir string, env map[string]string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), envServeChild+"="+dir)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, done: make(chan error, 1)}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "custody serving on "); ok {
				urls <- u
			}
		}
		c.done <- cmd.Wait()
	}()
	t.Cleanup(func() { cmd.Process.Kill() })
	select {
	case c.base = <-urls:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("serve did not start")
	}
	return c
}

// TestServeInstanceKilled runs three serve processes on one database,
// kills one with SIGKILL under load, and restarts it: nothing
// acknowledged is lost, the others go on meanwhile, the restarted one
// joins the same chain, and the chain verifies.
func TestServeInstanceKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes")
	}
	url, dir := pgtest.URL(t), t.TempDir()
	env := scaledEnv(url, dir)
	var kids []*child
	for i := range 3 {
		kids = append(kids, startChild(t, filepath.Join(dir, fmt.Sprint("data", i)), env))
	}
	var acked receipts
	var afterKill atomic.Int64
	var killed atomic.Bool
	ctx, cancel := context.WithCancel(context.Background())
	var load sync.WaitGroup
	for i := range 3 {
		for g := range 2 {
			load.Go(func() {
				if err := driveInstance(ctx, kids[i], i, g, &acked, &killed, &afterKill); err != nil && i != 0 {
					t.Errorf("instance %d, which was not killed: %v", i, err)
				}
			})
		}
	}
	// The kill lands under load, however slowly the calls go.
	if !within(20*time.Second, func() bool { return acked.len() >= 20 }) {
		t.Fatal("too few calls were acknowledged before the kill")
	}
	killed.Store(true)
	if err := kids[0].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-kids[0].done
	if !within(20*time.Second, func() bool { return afterKill.Load() > 0 }) {
		t.Fatal("no call was acknowledged by the other instances after the kill")
	}
	restarted := startChild(t, filepath.Join(dir, "data0"), env)
	code, body, err := postStatus(restarted.base+"/v1/calls", pgAgentToken, `{"trace_id":"back","tool":"get_time","arguments":{"zone":"UTC"}}`)
	if err != nil || code != 200 {
		t.Fatalf("a call to the restarted instance: %d %s %v", code, body, err)
	}
	if err := acked.add(body); err != nil {
		t.Fatal(err)
	}
	cancel()
	load.Wait()
	for _, c := range []*child{kids[1], kids[2], restarted} {
		c.cmd.Process.Signal(syscall.SIGTERM)
		if err := <-c.done; err != nil {
			t.Fatalf("serve ended with %v after SIGTERM", err)
		}
	}
	db, err := postgres.Open(context.Background(), url, postgres.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rep, err := db.Verify(context.Background())
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	es, err := db.Entries(context.Background(), custody.Query{Limit: int(rep.Entries)})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range acked.list {
		if r.Seq > int64(len(es)) || es[r.Seq-1].Hash != r.Hash {
			t.Fatalf("acknowledged receipt %+v is not on the ledger", r)
		}
	}
	t.Logf("%d entries, %d acknowledged calls, %d after the kill", rep.Entries, len(acked.list), afterKill.Load())
}

// driveInstance calls c until ctx ends, recording every acknowledged
// receipt, and returns the first call that failed: expected of the
// instance that is killed, of no other.
func driveInstance(ctx context.Context, c *child, i, g int, acked *receipts, killed *atomic.Bool, afterKill *atomic.Int64) error {
	tools := []string{`"tool":"get_time","arguments":{"zone":"UTC"}`, `"tool":"write_note","arguments":{"title":"t","text":"a note"}`}
	for n := 0; ctx.Err() == nil; n++ {
		call := fmt.Sprintf(`{"trace_id":"kill-%d-%d",%s}`, i, g, tools[n%2])
		code, body, err := postStatus(c.base+"/v1/calls", pgAgentToken, call)
		if err == nil && code != 200 {
			err = fmt.Errorf("call answered %d: %s", code, body)
		}
		if err == nil {
			err = acked.add(body)
		}
		if err != nil {
			return err
		}
		if killed.Load() && i != 0 {
			afterKill.Add(1)
		}
	}
	return nil
}
