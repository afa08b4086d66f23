package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/systems"
	"github.com/custody-dev/custody/systems/mesh"
)

// demoOperator is the scripted operator of the demo.
const demoOperator = "demo-operator"

// Demo runs custody demo mesh: ridge-fire with 12 nodes on a loopback and
// a scripted operator. It exits 0 only when no aggregation escalates past
// its inputs, a stale node is capped, the broadcast threads its approval
// id through the ledger, and the ledger verifies.
func (Simulator) Demo(ctx context.Context, env systems.Env, args []string) int {
	fs := env.Flags("demo mesh", "[--data DIR] [--minutes M]")
	data := fs.String("data", "", "data `DIR` (default: a temporary directory, removed afterwards)")
	minutes := fs.Int("minutes", 15, "simulated `M`inutes")
	contracts := env.ContractsFlag(fs)
	if ok, code := env.Parse(fs, args); !ok {
		return code
	}
	dir, cleanup, err := dataDir(*data)
	if err != nil {
		return env.Host.Fail(err)
	}
	defer cleanup()
	st, err := env.Host.Open(ctx, systems.Open{Data: dir, Contracts: *contracts, Scratch: true}) // a scratch run, never a shared store
	if err != nil {
		return env.Host.Fail(err)
	}
	defer st.Close()
	sim, err := newSim(env.Stderr, st, ScenarioRidgeFire, 12, time.Duration(*minutes)*time.Minute, 0, scriptedOperator)
	if err != nil {
		return env.Host.Fail(err)
	}
	receivers, err := demoReceivers(ctx, sim, st)
	if err != nil {
		return env.Host.Fail(err)
	}
	if err := sim.Run(ctx); err != nil {
		return env.Host.Fail(err)
	}
	progressDone(env.Stderr)
	if err := sim.Timeline.WriteTimeline(env.Stdout); err != nil {
		return env.Host.Fail(err)
	}
	if err := demoCheck(ctx, env.Stdout, st, sim, receivers); err != nil {
		fmt.Fprintf(env.Stdout, "\nFAILED: %v\n", err)
		return systems.ExitFailed
	}
	return systems.ExitOK
}

// demoAudiences are the audiences the scripted operator picks.
func demoAudiences() []string {
	return []string{"ground_crew_alpha", "ops_center", "evacuation_route_signage"}
}

// demoReceivers listens as every audience the operator picks.
func demoReceivers(ctx context.Context, sim *Sim, st *systems.Stack) ([]*mesh.Receiver, error) {
	var out []*mesh.Receiver
	for _, a := range demoAudiences() {
		r := &mesh.Receiver{Audience: a, Approvals: st.Approvals,
			Wire: &mesh.Wire{Transport: sim.Aggregator.Transport(), Validator: st.Registry, Ledger: st.Store, Actor: a, Now: sim.Now, Roster: sim.Roster}}
		if _, err := r.Listen(ctx); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// scriptedOperator approves the first emergency aggregation, lowered to
// critical and shortened to its first sentences, once; it declines
// nothing and leaves the rest pending.
func scriptedOperator(ctx context.Context, s *Sim) error {
	if len(s.Timeline.Broadcasts) > 0 {
		return nil
	}
	for _, c := range s.Desk.Cases() {
		agg := c.Aggregation
		if c.Status != mesh.CasePending || agg.SeverityTier != mesh.Emergency {
			continue
		}
		_, err := s.Desk.Approve(ctx, mesh.Form{
			ApprovalRequestID: agg.ApprovalRequestID, OperatorID: demoOperator, Audiences: demoAudiences(),
			Tier: mesh.Critical, Text: shorten(mesh.Citations(agg.AggregationText), 300), Note: "scripted demo operator",
		})
		return err
	}
	return nil
}

// shorten cuts text at the last list separator before n bytes: the result
// holds only words of the original, so it never introduces anything.
func shorten(text string, n int) string {
	if len(text) <= n {
		return text
	}
	cut := strings.LastIndex(text[:n], ", ")
	if cut < 20 {
		return text
	}
	return text[:cut] + "."
}

// demoCheck checks the demo's four promises and prints each.
func demoCheck(ctx context.Context, out io.Writer, st *systems.Stack, sim *Sim, receivers []*mesh.Receiver) error {
	capped, err := sim.Timeline.Check()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\ncheck      %d aggregations, none above its inputs\n", len(sim.Timeline.Aggregations))
	if capped == 0 {
		return errors.New("no aggregation capped a stale node")
	}
	fmt.Fprintf(out, "check      %d aggregations capped a stale node at warning\n", capped)
	if len(sim.Timeline.Broadcasts) != 1 {
		return fmt.Errorf("%d broadcasts, want 1", len(sim.Timeline.Broadcasts))
	}
	b := sim.Timeline.Broadcasts[0]
	for _, r := range receivers {
		if len(r.Accepted()) != 1 {
			return fmt.Errorf("audience %s received %d broadcasts", r.Audience, len(r.Accepted()))
		}
	}
	if err := demoThread(ctx, st, b.ApprovalRequestID); err != nil {
		return err
	}
	n, err := demoApprovals(ctx, st, sim)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "check      %d aggregations, each approval_request_id names a real approval on the ledger\n", n)
	fmt.Fprintf(out, "check      broadcast %s: aggregation → approval → decision → broadcast → %d audiences on the ledger\n", b.ApprovalRequestID, len(receivers))
	rep, err := st.Seal(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "ledger     verified: %s\n", rep)
	return nil
}

// demoApprovals checks that the approval_request_id of every aggregation
// names an approval that exists, with its request on the ledger under the
// same id, and returns how many it checked.
func demoApprovals(ctx context.Context, st *systems.Stack, sim *Sim) (int, error) {
	for _, a := range sim.Timeline.Aggregations {
		id := a.Aggregation.ApprovalRequestID
		if _, err := st.Approvals.Get(ctx, id); err != nil {
			return 0, fmt.Errorf("aggregation %s names no approval: %w", id, err)
		}
		es, err := st.Store.Entries(ctx, custody.Query{Kind: custody.KindApprovalRequest, Trace: "mesh-" + id, Limit: 2})
		if err != nil {
			return 0, err
		}
		if len(es) != 1 {
			return 0, fmt.Errorf("aggregation %s: %d approval requests on the ledger, want 1", id, len(es))
		}
	}
	return len(sim.Timeline.Aggregations), nil
}

// demoThread checks that one approval id threads the aggregation, the
// request, the decision and the broadcast on the ledger.
func demoThread(ctx context.Context, st *systems.Stack, id string) error {
	es, err := st.Store.Entries(ctx, custody.Query{Refs: map[string]string{mesh.RefApproval: id}, Limit: 1000})
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, e := range es {
		have[e.Kind+"/"+e.Refs["mesh_kind"]] = true
	}
	for _, want := range []string{mesh.EntrySent + "/aggregation", custody.KindApprovalRequest + "/", custody.KindApprovalDecided + "/",
		mesh.EntryBroadcastStarted + "/", mesh.EntrySent + "/broadcast", mesh.EntryReceived + "/broadcast"} {
		if !have[want] {
			return fmt.Errorf("approval %s does not thread %s on the ledger", id, want)
		}
	}
	return nil
}
