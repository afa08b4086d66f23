package gate

import (
	"testing"
	"time"

	"github.com/custody-dev/custody/internal/testclock"
)

// TestTallyKeepsOnlyReadsNoCommitOverlapped: a read that a commit of its
// key overlapped, begun before it or ended during it, may miss that
// commit, so it is not kept; a read that none overlapped is.
func TestTallyKeepsOnlyReadsNoCommitOverlapped(t *testing.T) {
	clk := testclock.New(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	ta := newTally(clk.Now)
	known := func(key string) (int64, bool) {
		n, ok, _ := ta.get("budget", key)
		return n, ok
	}

	_, _, tk := ta.get("budget", "ended-during")
	end := ta.begin("budget", "ended-during", 1)
	end(true)
	ta.learn(tk, 4)
	if _, ok := known("ended-during"); ok {
		t.Fatal("a read during which a commit ended was kept")
	}

	_, _, tk = ta.get("budget", "under-way")
	end = ta.begin("budget", "under-way", 1)
	ta.learn(tk, 4)
	end(true)
	if _, ok := known("under-way"); ok {
		t.Fatal("a read during which a commit was under way was kept")
	}

	end = ta.begin("budget", "begun-before", 1)
	_, _, tk = ta.get("budget", "begun-before")
	end(true)
	ta.learn(tk, 4)
	if _, ok := known("begun-before"); ok {
		t.Fatal("a read begun while a commit was under way was kept")
	}

	_, _, tk = ta.get("budget", "alone")
	ta.learn(tk, 4)
	if n, ok := known("alone"); !ok || n != 4 {
		t.Fatalf("a read no commit overlapped: %d, %v; want 4 kept", n, ok)
	}
	ta.begin("budget", "alone", 1)(true)
	if n, ok := known("alone"); !ok || n != 5 {
		t.Fatalf("after a commit: %d, %v; want 5", n, ok)
	}
	ta.begin("budget", "alone", 1)(false)
	if _, ok := known("alone"); ok {
		t.Fatal("a count a failed commit left in doubt is still trusted")
	}
}

// TestTallyAges: a learned count is read again once older than maxAge;
// a new trace's count is 0 until a commit adds to it.
func TestTallyAges(t *testing.T) {
	clk := testclock.New(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	ta := newTally(clk.Now)
	_, _, tk := ta.get("rate", "k")
	ta.learn(tk, 2)
	clk.Add(tallyMaxAge - time.Millisecond)
	if n, ok, _ := ta.get("rate", "k"); !ok || n != 2 {
		t.Fatalf("within maxAge: %d, %v; want 2", n, ok)
	}
	clk.Add(time.Millisecond)
	if _, ok, _ := ta.get("rate", "k"); ok {
		t.Fatal("a count as old as maxAge is still trusted")
	}
	ta.fresh("budget", "new-trace/tool")
	if n, ok, _ := ta.get("budget", "new-trace/tool"); !ok || n != 0 {
		t.Fatalf("a new trace's count: %d, %v; want 0", n, ok)
	}
	ta.begin("budget", "new-trace/tool", 1)(true)
	if n, ok, _ := ta.get("budget", "new-trace/tool"); !ok || n != 1 {
		t.Fatalf("a new trace's count after a commit: %d, %v; want 1", n, ok)
	}
}

// TestTallyTrimKeepsCommitsUnderWay: a full tally drops its idle
// counters, never one whose commit is under way, whose end still counts.
func TestTallyTrimKeepsCommitsUnderWay(t *testing.T) {
	clk := testclock.New(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	ta := newTally(clk.Now)
	ta.max = 4
	_, _, tk := ta.get("budget", "busy")
	ta.learn(tk, 1)
	end := ta.begin("budget", "busy", 1)
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		ta.fresh("budget", k)
	}
	if len(ta.counts) > ta.max {
		t.Fatalf("the tally holds %d counters, more than its %d", len(ta.counts), ta.max)
	}
	end(true)
	if n, ok, _ := ta.get("budget", "busy"); !ok || n != 2 {
		t.Fatalf("the counter whose commit was under way: %d, %v; want 2", n, ok)
	}
}
