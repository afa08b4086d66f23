package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/custody-dev/custody"
)

// TestCountOnceAcrossInstances: increments of one counter from several
// instances at once each see a value of their own, 1 to n, as the
// console's single-use sign-in codes rely on: the first to count a code's
// use is the one it opens a session for.
func TestCountOnceAcrossInstances(t *testing.T) {
	dbs, _ := instances(t, 3, Options{})
	const n = 48
	got := make([]int64, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		db := dbs[i%len(dbs)]
		wg.Go(func() {
			<-start
			got[i], errs[i] = db.IncrState(context.Background(), "console_login_code_uses", "code-1", 1)
		})
	}
	close(start)
	wg.Wait()
	seen := make([]bool, n+1)
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("increment %d: %v", i, errs[i])
		}
		if got[i] < 1 || got[i] > n || seen[got[i]] {
			t.Fatalf("increment %d saw %d: want a value of its own in 1..%d", i, got[i], n)
		}
		seen[got[i]] = true
	}
	firsts := 0
	for _, v := range got {
		if v == 1 {
			firsts++
		}
	}
	if firsts != 1 {
		t.Fatalf("%d increments saw 1, want exactly one", firsts)
	}
}

// TestStateSharedAcrossInstances: while one instance replaces a session's
// document again and again, another reads each version whole and never
// an older one after a newer, and lists the last.
func TestStateSharedAcrossInstances(t *testing.T) {
	dbs, _ := instances(t, 2, Options{})
	ctx := context.Background()
	a, b := dbs[0], dbs[1]
	if err := a.PutState(ctx, "console_sessions", "s1", json.RawMessage(`{"v":0}`)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for v := 1; v <= 50; v++ {
			if err := a.PutState(ctx, "console_sessions", "s1", json.RawMessage(fmt.Sprintf(`{"v":%d}`, v))); err != nil {
				t.Error(err)
				return
			}
		}
	})
	last := -1
	for last < 50 {
		doc, err := b.State(ctx, "console_sessions", "s1")
		if err != nil {
			t.Fatal(err)
		}
		var s struct{ V int }
		if err := json.Unmarshal(doc, &s); err != nil {
			t.Fatalf("a reader found %q: %v", doc, err)
		}
		if s.V < last {
			t.Fatalf("a reader found version %d after %d", s.V, last)
		}
		last = s.V
		if t.Failed() {
			break
		}
	}
	wg.Wait()
	if docs, err := b.States(ctx, "console_sessions"); err != nil || len(docs) != 1 || string(docs["s1"]) != `{"v":50}` {
		t.Fatalf("States = %v, %v", docs, err)
	}
	_, err := b.State(ctx, "console_sessions", "s2")
	wantKind(t, "State of a session never opened", err, custody.ENOTFOUND)
}
