package peas_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/systems/llm"
	"github.com/custody-dev/custody/systems/peas"
)

// posted runs a chain whose operator approved the sign showing message and
// returns it with its sign update posted.
func (s *stack) posted(t *testing.T, message string) *peas.Chain {
	t.Helper()
	ch := s.pending(t)
	edited := `{"billboard_id":"` + sign + `","message":"` + message + `","duration_s":1800}`
	s.decide(t, ch.ApprovalID, approval.Approve, []byte(edited))
	if err := s.sys.Continue(context.Background(), s.gw, ch); err != nil || ch.VMSUpdateID == "" {
		t.Fatalf("chain: %v (%+v)", err, ch)
	}
	return ch
}

// TestWarningMatchesTheSign: an in-car warning may restate the approved
// sign in spoken form, never add a claim to it. The agent's refusal and
// the ledger entry name the claim that is not on the sign.
//
// The planner once said "Warning from the sign ahead: snow and ice ahead.
// slow down", and this test accepted it; "warning", "from" and "sign" are
// not on the sign, so the rule refuses it (OldPlannerWording).
func TestWarningMatchesTheSign(t *testing.T) {
	s := newStack(t, llm.Router{})
	ctx := context.Background()
	ch := s.posted(t, "SNOW AND ICE AHEAD. SLOW DOWN")
	pile := s.posted(t, "WHITEOUT. PILE-UP AHEAD. SLOW DOWN NOW")
	tests := []struct {
		name  string
		ch    *peas.Chain
		text  string
		claim string // named by the refusal; "" when accepted
	}{
		{"RestatesSign", ch, "Snow and ice ahead. Slow down.", ""},
		{"PlannerWording", ch, "Snow and ice ahead. Slow down.", ""},
		{"SentenceCase", pile, "Slow down now.", ""},
		{"Exclaimed", pile, "Whiteout. Pile-up ahead. Slow down now!", ""},
		{"OldPlannerWording", ch, "Warning from the sign ahead: snow and ice ahead. slow down", `"warning"`},
		{"AllClearSpeedUp", ch, "All clear, speed up to 80 mph", `"clear"`},
		{"AllClearNoNumber", ch, "All clear ahead, drive normally", `"clear"`},
		{"InventedNumber", ch, "Snow and ice in 2 miles. Slow down.", `"2"`},
		{"InventedMeasurement", ch, "Heavy fog ahead. Slow down.", `"fog"`},
		{"InventedPlace", ch, "Snow and ice near Kalamazoo. Slow down.", `"kalamazoo"`},
		{"BridgeCollapsed", pile, "Bridge collapsed ahead. Turn around and exit now.", `"bridge"`},
		{"Tornado", pile, "Tornado warning. Take shelter under the overpass.", `"tornado"`},
		{"NumberInWords", pile, "slow to thirty miles per hour", `"thirty" (30)`},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := fmt.Sprintf(`{"vehicle_id":"veh-%d","vms_update_id":%q,"warning_text":%q}`, i, tt.ch.VMSUpdateID, tt.text)
			_, err := s.call(tt.ch.Trace, peas.ToolNotify, args)
			if tt.claim == "" {
				if err != nil {
					t.Fatalf("warning %q refused: %v", tt.text, err)
				}
				return
			}
			s.refusedOnLedger(t, err, custody.EINVALID)
			e := custody.AsError(err)
			named := false
			for _, v := range e.Violations {
				if v.Instance != "/warning_text" {
					t.Fatalf("violation %+v, want it at /warning_text", v)
				}
				named = named || v.Message == tt.claim+" is not on the sign"
			}
			if !named {
				t.Fatalf("violations %+v name no %s", e.Violations, tt.claim)
			}
			if !strings.Contains(e.Message, tt.claim+" is not on the sign") {
				t.Fatalf("refusal %q does not name %s", e.Message, tt.claim)
			}
			es, qerr := s.db.Entries(ctx, custody.Query{After: e.Receipt.Seq - 1, Limit: 1})
			if qerr != nil || len(es) != 1 || !strings.Contains(string(es[0].Body), strings.ReplaceAll(tt.claim, `"`, `\"`)) {
				t.Fatalf("ledger entry %d does not name %s (%v)", e.Receipt.Seq, tt.claim, qerr)
			}
		})
	}
}

// TestRefusedWarningOnTheConsole: a chain whose agent said more than the
// sign stops, and the console's view of the chain names the claim.
func TestRefusedWarningOnTheConsole(t *testing.T) {
	s := newStack(t, llm.Router{Main: addsClaim{}, Edge: llm.Template{}})
	ctx := context.Background()
	ch, err := s.sys.Start(ctx, s.gw, location, json.RawMessage(whiteout))
	if err != nil || ch.Stage != peas.StagePending {
		t.Fatalf("chain %+v: %v", ch, err)
	}
	s.decide(t, ch.ApprovalID, approval.Approve, nil)
	if err := s.sys.Continue(ctx, s.gw, ch); err != nil {
		t.Fatal(err)
	}
	if ch.Stage != peas.StageStopped || ch.Refusal == nil || ch.Refusal.Tool != peas.ToolNotify {
		t.Fatalf("chain stage %q, refusal %+v: want stopped at notify_driver's refusal", ch.Stage, ch.Refusal)
	}
	snap, err := s.sys.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range snap.Corridors {
		if c.LocationID == location {
			if c.Chain == nil || c.Chain.Refusal == nil || !strings.Contains(c.Chain.Refusal.Message, `"bridge" is not on the sign`) {
				t.Fatalf("console chain does not name the claim: %+v", c.Chain.Refusal)
			}
			return
		}
	}
	t.Fatalf("corridor %s not on the console", location)
}

// addsClaim is the planner with a bridge added to every warning.
type addsClaim struct{}

func (addsClaim) Name() string { return "adds-claim" }

func (addsClaim) Chat(ctx context.Context, r llm.Request) (llm.Response, error) {
	resp, err := peas.Planner{}.Chat(ctx, r)
	for i, c := range resp.Message.ToolCalls {
		if c.Name != peas.ToolNotify {
			continue
		}
		var args map[string]any
		if json.Unmarshal(c.Arguments, &args) == nil {
			args["warning_text"] = "Bridge collapsed ahead. " + fmt.Sprint(args["warning_text"])
			resp.Message.ToolCalls[i].Arguments, _ = json.Marshal(args)
		}
	}
	return resp, err
}
