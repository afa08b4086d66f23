package replay_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/replay"
)

// call makes one call through l at its clock and returns its error,
// failing the test on custody's own failure.
func (l *live) call(t *testing.T, actor, trace, tool, args string) error {
	t.Helper()
	_, err := l.gw.Call(context.Background(), custody.Call{Actor: actor, Trace: trace, Tool: tool, Args: json.RawMessage(args)})
	if k := custody.ErrorKind(err); k == custody.EUNAVAILABLE || k == custody.EINTERNAL {
		t.Fatalf("call %s: %v", tool, err)
	}
	l.clk.Add(time.Minute)
	return err
}

// approve approves the request a held call's error names, with a grant
// of the tool to its agent when terms are given.
func (l *live) approve(t *testing.T, held error, terms *approval.GrantTerms) {
	t.Helper()
	ce := custody.AsError(held)
	if ce.Kind != custody.EPENDING || ce.ApprovalRequestID == "" {
		t.Fatalf("call was not held for an approval: %v", held)
	}
	if _, err := l.svc.Decide(context.Background(), ce.ApprovalRequestID,
		approval.Decision{Decision: approval.Approve, Operator: "op-1", Grant: terms}); err != nil {
		t.Fatalf("approve: %v", err)
	}
}

// approvedDay records calls that ran with an operator's approval and
// under a grant: pay 200 approved once, then post approved with a grant
// and two more posts under it.
func approvedDay(t *testing.T, url string) *live {
	t.Helper()
	l := newLive(t, offer(t, configFile(t, url, recordedPolicy, recordedAgents)))
	pay := `{"amount": 200, "to": "acct-1"}`
	l.approve(t, l.call(t, "bot-a", "trace-pay", "pay", pay), nil)
	if err := l.call(t, "bot-a", "trace-pay", "pay", pay); err != nil {
		t.Fatalf("approved pay: %v", err)
	}
	terms := &approval.GrantTerms{Arguments: json.RawMessage(`{"type": "object"}`), MaxUses: 5}
	l.approve(t, l.call(t, "bot-c", "trace-post", "post", `{"text": "first"}`), terms)
	for _, text := range []string{"first", "second", "third"} {
		if err := l.call(t, "bot-c", "trace-post", "post", `{"text": "`+text+`"}`); err != nil {
			t.Fatalf("post %s under the grant: %v", text, err)
		}
	}
	return l
}

// TestReplayReportsApprovalsAndGrants: calls that ran with a human's
// approval or under a grant are reported as not replayed, counted by
// reason with their seqs, when the new policy still holds them, and as
// held → allowed changes when it no longer asks for an approval.
func TestReplayReportsApprovalsAndGrants(t *testing.T) {
	url := api(t)
	rec := approvedDay(t, url)
	t.Run("StillHeld", func(t *testing.T) {
		rep, err := replay.Run(context.Background(), rec.db, offer(t, configFile(t, url, recordedPolicy, recordedAgents)), replay.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, u := range rep.NotReplayed {
			got[u.Reason] = u.Count
			if len(u.Seqs) != u.Count || u.Note == "" {
				t.Errorf("%+v: want a note and every seq", u)
			}
		}
		// The first post ran with the approval it was granted with;
		// the two after under the grant alone.
		if got[replay.NotApproval] != 2 || got[replay.NotGrant] != 2 || len(got) != 2 {
			t.Errorf("not replayed %v, want 2 approved and 2 granted", got)
		}
		if rep.Changed != 0 || rep.Calls != 2 {
			t.Errorf("%d of %d calls changed, want 0 of the 2 held ones", rep.Changed, rep.Calls)
		}
	})
	t.Run("NoLongerHeld", func(t *testing.T) {
		rep, err := replay.Run(context.Background(), rec.db, offer(t, configFile(t, url, looserPolicy, recordedAgents)), replay.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.NotReplayed) != 0 {
			t.Errorf("not replayed %+v: the new policy asks no approval", rep.NotReplayed)
		}
		for _, d := range rep.Decisions {
			if d.Replayed != gate.Allowed {
				t.Errorf("seq %d %s: replayed %s, want allowed", d.Seq, d.Tool, d.Replayed)
			}
		}
		if rep.Calls != 6 || rep.Changed != 6 {
			t.Errorf("%d of %d calls changed, want 6 of 6 (held → allowed)", rep.Changed, rep.Calls)
		}
	})
}

// TestReplayReportsLinks: a tool with custody links under the new policy
// is not decided past them: its calls the other rules let go on are
// reported as not replayed, those they deny are replayed.
func TestReplayReportsLinks(t *testing.T) {
	url := api(t)
	rec, _ := recordedDay(t, url)
	o := offer(t, configFile(t, url, stricterPolicy, recordedAgents))
	for i := range o.Tools {
		if o.Tools[i].Spec.Name == "lookup" {
			o.Tools[i].Spec.Links = []custody.Link{{Arg: "/id", Tool: "pay", Ref: "receipt"}}
		}
	}
	rep, err := replay.Run(context.Background(), rec.db, o, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	links, denied := 0, 0
	for _, d := range rep.Decisions {
		switch {
		case d.NotReplayed == replay.NotLink:
			links++
			if d.Tool != "lookup" || d.Replayed == gate.Denied {
				t.Errorf("seq %d: %s %s reported as unchecked links", d.Seq, d.Tool, d.Replayed)
			}
		case d.Tool == "lookup":
			denied++
			if d.Replayed != gate.Denied {
				t.Errorf("seq %d: lookup %s replayed past its links", d.Seq, d.Replayed)
			}
		}
	}
	if links == 0 || denied == 0 {
		t.Fatalf("%d lookups not replayed for their links, %d denied: want some of each", links, denied)
	}
	if n := countOf(rep, replay.NotLink); n != links {
		t.Errorf("report counts %d calls with links, want %d", n, links)
	}
}

// countOf is the count of calls not replayed for reason.
func countOf(rep *replay.Report, reason string) int {
	for _, u := range rep.NotReplayed {
		if u.Reason == reason {
			return u.Count
		}
	}
	return 0
}
