package replay_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/config"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/internal/testclock"
	"github.com/custody-dev/custody/ledger"
	"github.com/custody-dev/custody/replay"
	"github.com/custody-dev/custody/store/sqlite"
	"github.com/custody-dev/custody/upstream"
)

// start is when the recorded day begins.
var start = time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)

// Policies of the recorded day and of the configurations replayed over it.
const (
	recordedPolicy = `{
  "lookup": {"access": "READ", "effect": "NONE"},
  "pay": {"access": "WRITE", "effect": "REVERSIBLE", "denyWhen": "args.amount > 1000", "approveWhen": "args.amount > 100",
    "rate": {"per": "agent", "calls": 4, "every": "1h"}},
  "post": {"access": "WRITE", "effect": "CONSEQUENTIAL"}}`
	stricterPolicy = `{
  "lookup": {"access": "READ", "effect": "NONE", "maxCallsPerTrace": 3, "arguments": {"properties": {"n": {"maximum": 5}}}},
  "pay": {"access": "WRITE", "effect": "REVERSIBLE", "denyWhen": "args.amount > 500", "approveWhen": "args.amount > 50",
    "rate": {"per": "agent", "calls": 2, "every": "1h"}},
  "post": {"access": "WRITE", "effect": "CONSEQUENTIAL"}}`
	looserPolicy = `{
  "lookup": {"access": "READ", "effect": "NONE"},
  "pay": {"access": "WRITE", "effect": "REVERSIBLE", "denyWhen": "args.amount > 5000"},
  "post": {"access": "WRITE", "effect": "CONSEQUENTIAL", "approval": "NOT_REQUIRED"}}`
	recordedAgents = `{"bot-b": {"tools": ["lookup"]}, "bot-a": {"tools": ["*"]}, "bot-c": {"tools": ["*"]}}`
	looserAgents   = `{"bot-b": {"tools": ["lookup", "pay"]}, "bot-a": {"tools": ["*"]}, "bot-c": {"tools": ["*"]}}`
)

// api serves the HTTP tools: every call answers {"ok": true}.
func api(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"ok": true}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// configFile is a configuration of the three tools at url under the
// policies and agents given.
func configFile(t *testing.T, url, policies, agents string) []byte {
	t.Helper()
	tool := func(name, props string) string {
		return fmt.Sprintf(`%q: {"url": "%s/%s", "input": {"type": "object", "properties": {%s}},
      "output": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}`, name, url, name, props)
	}
	return []byte(`{"httpTools": {` + strings.Join([]string{
		tool("lookup", `"id": {"type": "string"}, "n": {"type": "integer"}`),
		tool("pay", `"amount": {"type": "number"}, "to": {"type": "string"}`),
		tool("post", `"text": {"type": "string"}`),
	}, ",") + `}, "tools": ` + policies + `, "agents": ` + agents + `}`)
}

// offer parses a configuration and returns its offer, failing the test
// on a bad one.
func offer(t *testing.T, raw []byte) replay.Offer {
	t.Helper()
	f, err := config.Parse(raw, func(string) string { return "" })
	if err != nil {
		t.Fatalf("parse config: %v", err)
	}
	o, err := replay.Configured(context.Background(), f, "replay-test", contract.Options{})
	if err != nil {
		t.Fatalf("offer: %v", err)
	}
	return o
}

// live is a real gateway on a real SQLite store in a temp dir, with a
// clock the test moves.
type live struct {
	dir string
	db  *sqlite.DB
	gw  *gate.Gateway
	svc *approval.Service
	clk *testclock.Clock
	// pins are the tool pins of a gateway fronting MCP servers.
	pins *upstream.Pins
}

func newLive(t *testing.T, o replay.Offer) *live {
	t.Helper()
	l := &live{dir: t.TempDir(), clk: testclock.New(start)}
	var err error
	if l.db, err = sqlite.Open(context.Background(), l.dir, sqlite.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.db.Close() })
	l.svc, err = approval.New(approval.Config{Store: l.db, Ledger: l.db, State: l.db, Now: l.clk.Now,
		Validate:   func(ctx context.Context, a custody.Approval) error { return l.gw.CheckApproval(ctx, a) },
		CheckGrant: func(ctx context.Context, g custody.Grant) error { return l.gw.CheckGrant(ctx, g) }})
	if err != nil {
		t.Fatal(err)
	}
	if l.gw, err = gate.New(gate.Config{Registry: o.Registry, Ledger: l.db, Approvals: l.svc, State: l.db, Now: l.clk.Now,
		Allowed: o.Allowed}, o.Envelope, o.Tools); err != nil {
		t.Fatal(err)
	}
	return l
}

// verdict is what a live call's error says the policy decided.
func verdict(err error) gate.Verdict {
	switch custody.ErrorKind(err) {
	case "":
		return gate.Allowed
	case custody.EPENDING, custody.EEXPIRED:
		return gate.Held
	}
	return gate.Denied
}

// traffic is a fixed day of mixed calls: three agents in two traces
// each, three tools, arguments that some policy refuses or holds, one
// call every seven minutes. It is the same every run.
func traffic() []custody.Call {
	agents := []string{"bot-a", "bot-b", "bot-c"}
	var out []custody.Call
	for i := range 72 {
		a := agents[i%3]
		c := custody.Call{Actor: a, Trace: fmt.Sprintf("%s-trace-%d", a, i/36)}
		switch i % 4 {
		case 0, 3:
			c.Tool, c.Args = "lookup", json.RawMessage(fmt.Sprintf(`{"id": "p%d", "n": %d}`, i%5, i%9))
		case 1:
			c.Tool, c.Args = "pay", json.RawMessage(fmt.Sprintf(`{"amount": %d, "to": "acct-%d"}`, (i*137)%1400, i%3))
		case 2:
			c.Tool, c.Args = "post", json.RawMessage(fmt.Sprintf(`{"text": "note %d"}`, i%6))
		}
		if i == 50 {
			c.Args = json.RawMessage(`{"id": 7}`) // breaks the contract
		}
		out = append(out, c)
	}
	return out
}

// run makes the calls through l, moving its clock between them, and
// returns what its policy decided of each.
func (l *live) run(t *testing.T, calls []custody.Call) []gate.Verdict {
	t.Helper()
	var out []gate.Verdict
	for _, c := range calls {
		_, err := l.gw.Call(context.Background(), c)
		if k := custody.ErrorKind(err); k == custody.EUNAVAILABLE || k == custody.EINTERNAL {
			t.Fatalf("call %s by %s: %v", c.Tool, c.Actor, err)
		}
		out = append(out, verdict(err))
		l.clk.Add(7 * time.Minute)
	}
	return out
}

// recordedDay runs the traffic through a gateway under the recorded
// policy and returns it, and what was decided.
func recordedDay(t *testing.T, url string) (*live, []gate.Verdict) {
	t.Helper()
	l := newLive(t, offer(t, configFile(t, url, recordedPolicy, recordedAgents)))
	return l, l.run(t, traffic())
}

// TestReplayMatchesLive: replaying a recorded day under a stricter and a
// looser configuration decides each call as a live gateway under that
// configuration decides the same calls, and reports as changes exactly
// the calls whose decision differs from the recorded one.
func TestReplayMatchesLive(t *testing.T) {
	url := api(t)
	rec, recorded := recordedDay(t, url)
	for _, tc := range []struct {
		name, policies, agents string
		want                   []string // changes that must be among those reported
	}{
		{"Stricter", stricterPolicy, recordedAgents, []string{"allowed→denied", "allowed→held"}},
		{"Looser", looserPolicy, looserAgents, []string{"held→allowed", "denied→allowed"}},
		{"Same", recordedPolicy, recordedAgents, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := offer(t, configFile(t, url, tc.policies, tc.agents))
			rep, err := replay.Run(context.Background(), rec.db, o, replay.Options{})
			if err != nil {
				t.Fatalf("replay: %v", err)
			}
			compare(t, rep, recorded, newLive(t, o).run(t, traffic()), tc.want)
		})
	}
}

// TestReplaySince: --since reports only the recent calls, decided after
// the earlier ones that set their counts.
func TestReplaySince(t *testing.T) {
	url := api(t)
	rec, _ := recordedDay(t, url)
	o := offer(t, configFile(t, url, stricterPolicy, recordedAgents))
	all, err := replay.Run(context.Background(), rec.db, o, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	recent, err := replay.Run(context.Background(), rec.db, o, replay.Options{Since: start.Add(4 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	tail := all.Decisions[len(all.Decisions)-len(recent.Decisions):]
	if recent.Calls == 0 || recent.Calls >= all.Calls {
		t.Fatalf("since 4h: %d of %d calls", recent.Calls, all.Calls)
	}
	for i, d := range recent.Decisions {
		if d != tail[i] {
			t.Errorf("since: call %d decided %+v, the whole replay %+v", i, d, tail[i])
		}
	}
}

// TestReplayRefusesTamperedLedger: a ledger whose entry was changed
// after it was written is refused with the seq at fault.
func TestReplayRefusesTamperedLedger(t *testing.T) {
	url := api(t)
	rec, _ := recordedDay(t, url)
	o := offer(t, configFile(t, url, looserPolicy, recordedAgents))
	raw, err := sql.Open("sqlite", "file:"+filepath.Join(rec.dir, sqlite.DatabaseFile)+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	res, err := raw.Exec(`DROP TRIGGER entries_no_update; UPDATE entries SET body = CAST(replace(CAST(body AS TEXT), 'acct-1', 'acct-9') AS BLOB)
		WHERE seq = (SELECT min(seq) FROM entries WHERE CAST(body AS TEXT) LIKE '%acct-1%')`)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("tampered with %d entries, want 1", n)
	}
	_, err = replay.Run(context.Background(), rec.db, o, replay.Options{})
	var ve *ledger.VerifyError
	if !errors.As(err, &ve) {
		t.Fatalf("replay of a tampered ledger: %v, want a *ledger.VerifyError", err)
	}
}
