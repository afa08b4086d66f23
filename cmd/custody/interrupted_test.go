package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/example"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/internal/lockedbuf"
)

// hangingNote is write_note under another name whose handler waits for
// release: a WRITE call that is recorded as started and never ends while
// its process lives.
func hangingNote(release <-chan struct{}) gate.Tool {
	t := example.Tools(nil, nil)[1]
	t.Spec.Name, t.Spec.Refs = "hang_note", nil
	t.Deadline = time.Hour
	t.Handler = func(ctx context.Context, _ custody.Call) (json.RawMessage, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, fmt.Errorf("the process went away")
	}
	return t
}

// crashedCalls leaves in data a ledger written by the real gateway with
// finished calls (a note, a read, a refusal) and hung calls, as a process
// that died while they ran leaves it: their call.started has no outcome.
// It returns the seqs of the hung calls' intents.
func crashedCalls(t *testing.T, data string, hung int) []int64 {
	t.Helper()
	return crashedCallsIn(t, nil, data, hung)
}

// crashedCallsIn is crashedCalls on the store env names (SQLite in data
// when it names none).
func crashedCallsIn(t *testing.T, env map[string]string, data string, hung int) []int64 {
	t.Helper()
	ctx := context.Background()
	release := make(chan struct{})
	m := &Main{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard, Getenv: func(k string) string { return env[k] }}
	st, err := m.openStack(ctx, data, "", hangingNote(release))
	if err != nil {
		t.Fatal(err)
	}
	call := func(trace, tool, args string) error {
		_, err := st.gw.Call(ctx, custody.Call{Trace: trace, Actor: "agent", Tool: tool, Args: json.RawMessage(args)})
		return err
	}
	note := `{"title":"t","text":"a note"}`
	for i := range 3 {
		if err := call(fmt.Sprint("done-", i), "write_note", note); err != nil {
			t.Fatal(err)
		}
	}
	if err := call("done-read", "get_time", `{"zone":"UTC"}`); err != nil {
		t.Fatal(err)
	}
	if err := call("refused", "write_note", `{"title":7}`); custody.ErrorKind(err) != custody.EINVALID {
		t.Fatalf("an invalid call: %v", err)
	}
	var wg sync.WaitGroup
	for i := range hung {
		// The first hung call shares its trace with a finished one.
		trace := fmt.Sprint("hung-", i)
		if i == 0 {
			trace = "done-0"
		}
		wg.Go(func() { call(trace, "hang_note", note) })
	}
	var started []custody.Entry
	if !within(30*time.Second, func() bool {
		started, err = st.db.Entries(ctx, custody.Query{Kind: custody.KindCallStarted})
		return err == nil && len(started) == 3+hung
	}) {
		t.Fatalf("%d intents on the ledger, want %d: %v", len(started), 3+hung, err)
	}
	var seqs []int64
	for _, e := range started {
		if strings.Contains(string(e.Body), `"hang_note"`) {
			seqs = append(seqs, e.Seq)
		}
	}
	// The store closes under the hung calls: their outcomes are never
	// written, as after a crash.
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	close(release)
	wg.Wait()
	return seqs
}

// waitLog waits until serve's log holds want.
func waitLog(t *testing.T, log *lockedbuf.Buffer, want string) {
	t.Helper()
	if !within(60*time.Second, func() bool { return strings.Contains(log.String(), want) }) {
		t.Fatalf("serve never logged %q:\n%s", want, log)
	}
}

// showInterrupted runs `custody ledger show --interrupted --json` on the
// store where names (--data DIR or --store URL).
func showInterrupted(t *testing.T, where ...string) []custody.Entry {
	t.Helper()
	args := append(append([]string{"ledger", "show"}, where...), "--interrupted", "--json")
	code, out, errOut := runMain(t, nil, "", args...)
	if code != exitOK {
		t.Fatalf("ledger show --interrupted: exit %d: %s", code, errOut)
	}
	var es []custody.Entry
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var e custody.Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s: %v", sc.Text(), err)
		}
		es = append(es, e)
	}
	return es
}

// TestServeClosesInterruptedCalls: after a crash, the next start of serve
// ends every call left without an outcome with a call.interrupted naming
// its intent, and none of the finished ones; the start after that adds
// none; `custody ledger show --interrupted` lists them.
func TestServeClosesInterruptedCalls(t *testing.T) {
	const hung = 2
	data := filepath.Join(t.TempDir(), "data")
	seqs := crashedCalls(t, data, hung)

	for run, want := range []int{hung, 0} {
		log := &lockedbuf.Buffer{}
		_, _, stop := startServeLogged(t, log, map[string]string{}, "--data", data)
		waitLog(t, log, `msg="interrupted calls closed" count=`+strconv.Itoa(want))
		if code := stop(); code != exitOK {
			t.Fatalf("run %d: serve exited %d:\n%s", run, code, log)
		}
	}

	wantInterrupted(t, showInterrupted(t, "--data", data), seqs)
	code, out, _ := runMain(t, nil, "", "ledger", "show", "--data", data, "--interrupted")
	if code != exitOK || strings.Count(out, custody.KindCallInterrupted) != hung {
		t.Fatalf("ledger show --interrupted: exit %d:\n%s", code, out)
	}
	if code, out, errOut := runMain(t, nil, "", "ledger", "verify", "--data", data); code != exitOK {
		t.Fatalf("ledger verify: exit %d: %s %s", code, out, errOut)
	}
}

// wantInterrupted fails t unless es are call.interrupted entries of
// hang_note calls by "agent", each naming its intent and an unknown
// outcome, that close the intents at seqs, each once.
func wantInterrupted(t *testing.T, es []custody.Entry, seqs []int64) {
	t.Helper()
	var closed []int64
	for _, e := range es {
		seq, _ := strconv.ParseInt(e.Refs[refIntentSeq], 10, 64)
		closed = append(closed, seq)
		var body struct {
			Tool    string
			Outcome string
			Intent  struct {
				Seq  int64
				Hash string
			}
		}
		if err := json.Unmarshal(e.Body, &body); err != nil {
			t.Fatal(err)
		}
		if e.Kind != custody.KindCallInterrupted || body.Tool != "hang_note" || body.Outcome != custody.OutcomeUnknown ||
			body.Intent.Seq != seq || body.Intent.Hash == "" || e.Refs[refIntentHash] != body.Intent.Hash || e.Actor != "agent" {
			t.Errorf("interrupted entry %+v, body %s", e, e.Body)
		}
	}
	slices.Sort(closed)
	if !slices.Equal(closed, seqs) {
		t.Fatalf("call.interrupted closes intents %v, want the hung calls' %v", closed, seqs)
	}
}

// TestOpenIntents pairs intents and outcomes as the gateway writes them:
// an outcome ends the oldest open intent of its trace, agent, tool and
// arguments that came before it.
func TestOpenIntents(t *testing.T) {
	started := func(seq int64, trace, args string) custody.Entry {
		return custody.Entry{Seq: seq, Kind: custody.KindCallStarted, Trace: trace, Actor: "a",
			Body: json.RawMessage(`{"tool":"write_note","arguments":` + args + `}`)}
	}
	outcome := func(seq int64, kind, trace, args string) custody.Entry {
		return custody.Entry{Seq: seq, Kind: kind, Trace: trace, Actor: "a",
			Body: json.RawMessage(`{"tool":"write_note","arguments":` + args + `,"elapsed_us":1}`)}
	}
	tests := []struct {
		name    string
		entries []custody.Entry
		open    []int64
	}{
		{"Finished", []custody.Entry{started(1, "t", `{"n":1}`), outcome(2, custody.KindCallSucceeded, "t", `{"n":1}`)}, nil},
		{"RefusedAfterIntent", []custody.Entry{started(1, "t", `{"n":1}`), outcome(2, custody.KindCallRefused, "t", `{"n":1}`)}, nil},
		{"RefusedBeforeIntent", []custody.Entry{outcome(1, custody.KindCallRefused, "t", `{"n":1}`), started(2, "t", `{"n":1}`)}, []int64{2}},
		{"OtherArguments", []custody.Entry{started(1, "t", `{"n":1}`), outcome(2, custody.KindCallSucceeded, "t", `{"n":12}`)}, []int64{1}},
		{"OtherTrace", []custody.Entry{started(1, "t", `{"n":1}`), outcome(2, custody.KindCallFailed, "u", `{"n":1}`)}, []int64{1}},
		{"OldestFirst", []custody.Entry{started(1, "t", `{"n":1}`), started(2, "t", `{"n":1}`), outcome(3, custody.KindCallOutcomeUnknown, "t", `{"n":1}`)}, []int64{2}},
		{"Interrupted", []custody.Entry{started(1, "t", `{"n":1}`), started(2, "t", `{"n":1}`),
			interruptedEntry(started(2, "t", `{"n":1}`), "")}, []int64{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &openIntents{byCall: map[string][]intent{}}
			for _, e := range tt.entries {
				o.add(e)
			}
			var got []int64
			for _, e := range o.unfinished() {
				got = append(got, e.Seq)
			}
			if !slices.Equal(got, tt.open) {
				t.Fatalf("open intents %v, want %v", got, tt.open)
			}
		})
	}
}
