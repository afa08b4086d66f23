package replay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/config"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/internal/mcptest"
	"github.com/custody-dev/custody/internal/testclock"
	"github.com/custody-dev/custody/replay"
	"github.com/custody-dev/custody/store/sqlite"
	"github.com/custody-dev/custody/upstream"
)

// TestMain serves the mcptest tools on stdio when this test binary is
// started as an upstream MCP server.
func TestMain(m *testing.M) {
	if os.Getenv(mcptest.EnvServe) == "1" {
		opts := mcptest.Options{WriteFile: os.Getenv(mcptest.EnvWriteFile)}
		if err := mcptest.ServeStdio(context.Background(), opts, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Policies of the tools of the mcptest server "t" on the recorded day and
// in the configurations replayed over it.
const (
	serverRecorded = `{
  "t__echo": {"access": "READ", "effect": "NONE", "denyWhen": "args.message.size() > 12"},
  "t__append": {"access": "WRITE", "effect": "REVERSIBLE", "approveWhen": "args.line.endsWith('6') || args.line.endsWith('8')",
    "rate": {"per": "agent", "calls": 3, "every": "1h"}}}`
	serverStricter = `{
  "t__echo": {"access": "READ", "effect": "NONE", "denyWhen": "args.message.size() > 6", "approveWhen": "args.message.startsWith('pay')",
    "maxCallsPerTrace": 6, "arguments": {"properties": {"message": {"maxLength": 10}}}},
  "t__append": {"access": "WRITE", "effect": "REVERSIBLE", "approveWhen": "args.line.endsWith('6') || args.line.endsWith('8') || args.line.endsWith('2')",
    "rate": {"per": "agent", "calls": 1, "every": "1h"}}}`
	// serverLooser also governs t__sleep, which the recorded day did not:
	// no pin defines it.
	serverLooser = `{
  "t__echo": {"access": "READ", "effect": "NONE"},
  "t__append": {"access": "WRITE", "effect": "REVERSIBLE"},
  "t__sleep": {"access": "READ", "effect": "NONE"}}`
	serverAgents = `{"bot-a": {"tools": ["*"]}, "bot-b": {"tools": ["t__echo"]}, "bot-c": {"tools": ["*"]}}`
)

// serverConfig is a configuration fronting the mcptest server (this test
// binary, started as command) as upstream "t", under the policies given.
func serverConfig(t *testing.T, command, policies string) []byte {
	t.Helper()
	srv := map[string]any{"command": command, "env": map[string]string{
		mcptest.EnvServe: "1", mcptest.EnvWriteFile: filepath.Join(t.TempDir(), "appended")}}
	raw, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"t": srv},
		"tools": json.RawMessage(policies), "agents": json.RawMessage(serverAgents)})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// parseConfig parses a configuration, failing the test on a bad one.
func parseConfig(t *testing.T, raw []byte) *config.File {
	t.Helper()
	f, err := config.Parse(raw, func(string) string { return "" })
	if err != nil {
		t.Fatalf("parse config: %v", err)
	}
	return f
}

// newLiveServers is a real gateway fronting the configuration's MCP
// servers, started as serve starts them: their tools listed, pinned on a
// real SQLite store and governed by the configuration's policies.
func newLiveServers(t *testing.T, raw []byte) *live {
	t.Helper()
	ctx := context.Background()
	f := parseConfig(t, raw)
	set, err := upstream.Open(ctx, f.Upstream())
	if err != nil {
		t.Fatalf("open upstreams: %v", err)
	}
	t.Cleanup(func() { set.Close() })
	cs, err := set.Contracts()
	if err != nil {
		t.Fatal(err)
	}
	reg, err := contract.Load(contract.Options{Extra: cs})
	if err != nil {
		t.Fatal(err)
	}
	l := &live{dir: t.TempDir(), clk: testclock.New(start)}
	if l.db, err = sqlite.Open(ctx, l.dir, sqlite.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.db.Close() })
	svc, err := approval.New(approval.Config{Store: l.db, Ledger: l.db, State: l.db, Now: l.clk.Now,
		Validate: func(ctx context.Context, a custody.Approval) error { return l.gw.CheckApproval(ctx, a) }})
	if err != nil {
		t.Fatal(err)
	}
	l.svc, l.pins = svc, upstream.NewPins(l.db, l.db, svc)
	tools, err := set.Tools(ctx, l.pins)
	if err != nil {
		t.Fatal(err)
	}
	if l.gw, err = gate.New(gate.Config{Registry: reg, Ledger: l.db, Approvals: svc, State: l.db, Now: l.clk.Now,
		Allowed: f.Allowed()}, "replay-test", tools); err != nil {
		t.Fatal(err)
	}
	return l
}

// serverTraffic is a fixed day of mixed calls of the mcptest tools: three
// agents, two traces each, echo and append with arguments some policy
// refuses or holds, a call that breaks echo's contract and calls of
// t__sleep, which the recorded day does not govern.
func serverTraffic() []custody.Call {
	msgs := []string{"hi", "hello", "payday", "a longer text", "pay me now please", "good day"}
	agents := []string{"bot-a", "bot-b", "bot-c"}
	var out []custody.Call
	for i := range 48 {
		a := agents[i%3]
		c := custody.Call{Actor: a, Trace: fmt.Sprintf("%s-trace-%d", a, i/24)}
		switch i % 4 {
		case 0, 1, 3:
			c.Tool, c.Args = "t__echo", json.RawMessage(fmt.Sprintf(`{"message": %q}`, msgs[i%6]))
		case 2:
			c.Tool, c.Args = "t__append", json.RawMessage(fmt.Sprintf(`{"line": "line-%d"}`, i))
		}
		switch i {
		case 21:
			c.Args = json.RawMessage(`{"message": 7}`) // breaks the contract
		case 17, 30:
			c.Tool, c.Args = "t__sleep", json.RawMessage(`{"millis": 0}`)
		}
		out = append(out, c)
	}
	return out
}

// TestReplayServers: a day of calls recorded through a gateway fronting a
// real stdio MCP server is replayed under a stricter and a looser
// mcpServers configuration, with the tools' definitions taken from the
// ledger's pins and the server never started (the replayed
// configurations name a command that does not exist). Each call is
// decided as a live gateway fronting the server under the new
// configuration decides the same calls; the calls of a tool the new
// configuration governs but no pin defines are reported as not replayed.
func TestReplayServers(t *testing.T) {
	command, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rec := newLiveServers(t, serverConfig(t, command, serverRecorded))
	recorded := rec.run(t, serverTraffic())
	missing := filepath.Join(t.TempDir(), "no-such-server")
	for _, tc := range []struct {
		name, policies string
		want           []string // changes that must be among those reported
		unpinned       int      // calls not replayed: no pin defines their tool
	}{
		{"Stricter", serverStricter, []string{"allowed→denied", "allowed→held"}, 0},
		{"Looser", serverLooser, []string{"held→allowed", "denied→allowed"}, 2},
		{"Same", serverRecorded, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := replay.Configured(context.Background(), parseConfig(t, serverConfig(t, missing, tc.policies)), "replay-test", contract.Options{})
			if err != nil {
				t.Fatalf("offer: %v", err)
			}
			rep, err := replay.Run(context.Background(), rec.db, o, replay.Options{})
			if err != nil {
				t.Fatalf("replay: %v", err)
			}
			want := newLiveServers(t, serverConfig(t, command, tc.policies)).run(t, serverTraffic())
			compare(t, rep, recorded, want, tc.want)
			unpinned := 0
			for _, d := range rep.Decisions {
				if d.NotReplayed == replay.NotUnpinned {
					unpinned++
					if d.Tool != "t__sleep" {
						t.Errorf("seq %d: %s reported as not pinned", d.Seq, d.Tool)
					}
				}
			}
			if unpinned != tc.unpinned {
				t.Errorf("%d calls not replayed as unpinned, want %d", unpinned, tc.unpinned)
			}
		})
	}
}

// compare checks a replay's report against what the recorded day and a
// live run under the new configuration decided, call by call: every call
// replayed is decided as the live run decides it, the changes count the
// calls whose decision differs from the recorded one, and the calls not
// replayed count in neither.
func compare(t *testing.T, rep *replay.Report, recorded, want []gate.Verdict, changes []string) {
	t.Helper()
	if len(rep.Decisions) != len(want) {
		t.Fatalf("replayed %d calls, want %d", len(rep.Decisions), len(want))
	}
	changed, calls, skipped := 0, 0, 0
	for i, d := range rep.Decisions {
		if d.Recorded != recorded[i] {
			t.Errorf("call %d (seq %d, %s by %s): recorded %s, the recorded day decided %s", i, d.Seq, d.Tool, d.Agent, d.Recorded, recorded[i])
		}
		if d.NotReplayed != "" {
			skipped++
			continue
		}
		calls++
		if d.Replayed != want[i] {
			t.Errorf("call %d (seq %d, %s by %s): replayed %s (%s %s), a live run decides %s", i, d.Seq, d.Tool, d.Agent, d.Replayed, d.Rule, d.Where, want[i])
		}
		if recorded[i] != want[i] {
			changed++
		}
	}
	if rep.Changed != changed || rep.Calls != calls {
		t.Errorf("report: %d of %d calls changed, want %d of %d", rep.Changed, rep.Calls, changed, calls)
	}
	n := 0
	for _, u := range rep.NotReplayed {
		n += u.Count
		if len(u.Seqs) == 0 || len(u.Seqs) > u.Count || u.Note == "" {
			t.Errorf("not replayed %+v: no note, or example seqs that do not fit its count", u)
		}
	}
	if n != skipped {
		t.Errorf("not replayed: counted %d calls, want %d", n, skipped)
	}
	got := map[string]int{}
	sum := 0
	for _, c := range rep.Changes {
		got[string(c.From)+"→"+string(c.To)] += c.Count
		sum += c.Count
		if len(c.Seqs) == 0 || len(c.Seqs) > c.Count {
			t.Errorf("change %+v: example seqs do not fit its count", c)
		}
	}
	if sum != changed {
		t.Errorf("changes count %d calls, want %d", sum, changed)
	}
	for _, w := range changes {
		if got[w] == 0 {
			t.Errorf("no %s change reported; got %v", w, got)
		}
	}
}

// TestReplayQuarantined: a call refused while its tool was in quarantine
// (its server changed the tool's definition) is the upstream's doing, not
// a policy's: the replay reports it as not replayed, rather than as a
// denied → allowed change.
func TestReplayQuarantined(t *testing.T) {
	command, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	policies := `{"t__echo": {"access": "READ", "effect": "NONE"}, "t__redefine": {"access": "WRITE", "effect": "REVERSIBLE"}}`
	rec := newLiveServers(t, serverConfig(t, command, policies))
	if err := rec.call(t, "bot-a", "trace-1", "t__echo", `{"message": "hi"}`); err != nil {
		t.Fatalf("echo: %v", err)
	}
	if err := rec.call(t, "bot-a", "trace-1", "t__redefine", `{"description": "Echo, changed."}`); err != nil {
		t.Fatalf("redefine: %v", err)
	}
	deadline := time.Now().Add(time.Minute) // a hang guard only
	for !rec.pins.Quarantined("t__echo") {
		if time.Now().After(deadline) {
			t.Fatal("t__echo was never quarantined")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := rec.call(t, "bot-a", "trace-1", "t__echo", `{"message": "hi"}`); custody.ErrorKind(err) != custody.EDENIED {
		t.Fatalf("echo in quarantine: %v, want EDENIED", err)
	}
	o, err := replay.Configured(context.Background(), parseConfig(t, serverConfig(t, filepath.Join(t.TempDir(), "none"), policies)), "replay-test", contract.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := replay.Run(context.Background(), rec.db, o, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Decisions) != 3 || rep.Calls != 2 || rep.Changed != 0 || countOf(rep, replay.NotQuarantined) != 1 {
		t.Fatalf("report: %d calls, %d replayed, %d changed, not replayed %+v; want 3, 2, 0 and the quarantined one",
			len(rep.Decisions), rep.Calls, rep.Changed, rep.NotReplayed)
	}
	if d := rep.Decisions[2]; d.NotReplayed != replay.NotQuarantined || d.Recorded != gate.Denied {
		t.Errorf("the call in quarantine: %+v", d)
	}
}
