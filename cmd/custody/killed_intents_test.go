package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/lockedbuf"
	"github.com/custody-dev/custody/store/sqlite"
)

// TestServeKilledMidWriteMarksItsIntents kills serve with SIGKILL while
// WRITE calls run, then starts it again: every call.started the kill left
// without an outcome gets one call.interrupted, no finished call gets one,
// and a second start adds none. Each call has a trace of its own, so the
// test counts the unfinished intents by trace, apart from the code that
// closes them.
func TestServeKilledMidWriteMarksItsIntents(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a child process")
	}
	data := filepath.Join(t.TempDir(), "data")
	c := startChild(t, data, nil)
	agent := readToken(t, filepath.Join(data, agentTokenFile))
	var acked atomic.Int64
	var killed atomic.Bool
	var load sync.WaitGroup
	for g := range 4 {
		load.Go(func() {
			for i := 0; !killed.Load(); i++ {
				call := fmt.Sprintf(`{"trace_id":"kill-%d-%d","tool":"write_note","arguments":{"title":"t","text":"n"}}`, g, i)
				if code, _, err := postStatus(c.base+"/v1/calls", agent, call); err == nil && code == 200 {
					acked.Add(1)
				}
			}
		})
	}
	if !within(30*time.Second, func() bool { return acked.Load() >= 40 }) {
		t.Fatal("too few calls were acknowledged before the kill")
	}
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.done
	killed.Store(true)
	load.Wait()

	open := unfinishedByTrace(t, data)
	for run, want := range []int{len(open), 0} {
		log := &lockedbuf.Buffer{}
		_, _, stop := startServeLogged(t, log, map[string]string{}, "--data", data)
		waitLog(t, log, `msg="interrupted calls closed" count=`+strconv.Itoa(want))
		if code := stop(); code != exitOK {
			t.Fatalf("start %d: serve exited %d:\n%s", run, code, log)
		}
	}
	if left := unfinishedByTrace(t, data); len(left) != 0 {
		t.Errorf("intents left without an end after the restarts: %v", left)
	}
	t.Logf("%d calls acknowledged, %d intents the kill left open", acked.Load(), len(open))
}

// unfinishedByTrace returns the traces whose call.started has no later
// entry of the same trace: with a trace per call, the calls without an end.
func unfinishedByTrace(t *testing.T, data string) []string {
	t.Helper()
	db, err := sqlite.Open(context.Background(), data, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	es, err := db.Entries(context.Background(), custody.Query{Limit: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	open := map[string]bool{}
	for _, e := range es {
		switch {
		case e.Kind == custody.KindCallStarted:
			open[e.Trace] = true
		case open[e.Trace]:
			delete(open, e.Trace)
		}
	}
	var out []string
	for trace := range open {
		out = append(out, trace)
	}
	return out
}
