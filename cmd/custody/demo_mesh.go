package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/systems/mesh"
)

// demoMeshOperator is the scripted operator of the mesh demo.
const demoMeshOperator = "demo-operator"

// runDemoMesh runs ridge-fire with 12 nodes on a loopback and a scripted
// operator. It exits 0 only when no aggregation escalates past its inputs,
// a stale node is capped, the broadcast threads its approval id through
// the ledger, and the ledger verifies.
func (m *Main) runDemoMesh(ctx context.Context, args []string) int {
	fs := m.flags("demo mesh", "[--data DIR] [--minutes M]")
	data := fs.String("data", "", "data `DIR` (default: a temporary directory, removed afterwards)")
	minutes := fs.Int("minutes", 15, "simulated `M`inutes")
	contracts := m.contractsFlag(fs)
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	dir, cleanup, err := meshDataDir(*data)
	if err != nil {
		return m.fail(err)
	}
	defer cleanup()
	st, err := m.sqliteOnly().openStack(ctx, dir, *contracts) // a scratch run, never a shared store
	if err != nil {
		return m.fail(err)
	}
	defer st.Close()
	sim, err := m.newMeshSim(st, mesh.ScenarioRidgeFire, 12, time.Duration(*minutes)*time.Minute, 0, scriptedOperator)
	if err != nil {
		return m.fail(err)
	}
	receivers, err := demoReceivers(ctx, sim, st)
	if err != nil {
		return m.fail(err)
	}
	if err := sim.Run(ctx); err != nil {
		return m.fail(err)
	}
	m.progressDone()
	if err := sim.Timeline.WriteTimeline(m.Stdout); err != nil {
		return m.fail(err)
	}
	if err := m.demoMeshCheck(ctx, st, sim, receivers); err != nil {
		fmt.Fprintf(m.Stdout, "\nFAILED: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// demoAudiences are the audiences the scripted operator picks.
var demoAudiences = []string{"ground_crew_alpha", "ops_center", "evacuation_route_signage"}

// demoReceivers listens as every audience the operator picks.
func demoReceivers(ctx context.Context, sim *mesh.Sim, st *stack) ([]*mesh.Receiver, error) {
	var out []*mesh.Receiver
	for _, a := range demoAudiences {
		r := &mesh.Receiver{Audience: a, Approvals: st.approvals,
			Wire: &mesh.Wire{Transport: sim.Aggregator.Transport(), Validator: st.reg, Ledger: st.db, Actor: a, Now: sim.Now, Roster: sim.Roster}}
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
func scriptedOperator(ctx context.Context, s *mesh.Sim) error {
	if len(s.Timeline.Broadcasts) > 0 {
		return nil
	}
	for _, c := range s.Desk.Cases() {
		agg := c.Aggregation
		if c.Status != mesh.CasePending || agg.SeverityTier != mesh.Emergency {
			continue
		}
		_, err := s.Desk.Approve(ctx, mesh.Form{
			ApprovalRequestID: agg.ApprovalRequestID, OperatorID: demoMeshOperator, Audiences: demoAudiences,
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

// demoMeshCheck checks the demo's four promises and prints each.
func (m *Main) demoMeshCheck(ctx context.Context, st *stack, sim *mesh.Sim, receivers []*mesh.Receiver) error {
	capped, err := sim.Timeline.Check()
	if err != nil {
		return err
	}
	fmt.Fprintf(m.Stdout, "\ncheck      %d aggregations, none above its inputs\n", len(sim.Timeline.Aggregations))
	if capped == 0 {
		return errors.New("no aggregation capped a stale node")
	}
	fmt.Fprintf(m.Stdout, "check      %d aggregations capped a stale node at warning\n", capped)
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
	fmt.Fprintf(m.Stdout, "check      %d aggregations, each approval_request_id names a real approval on the ledger\n", n)
	fmt.Fprintf(m.Stdout, "check      broadcast %s: aggregation → approval → decision → broadcast → %d audiences on the ledger\n", b.ApprovalRequestID, len(receivers))
	return m.demoLedger(ctx, st)
}

// demoApprovals checks that the approval_request_id of every aggregation
// names an approval that exists, with its request on the ledger under the
// same id, and returns how many it checked.
func demoApprovals(ctx context.Context, st *stack, sim *mesh.Sim) (int, error) {
	for _, a := range sim.Timeline.Aggregations {
		id := a.Aggregation.ApprovalRequestID
		if _, err := st.approvals.Get(ctx, id); err != nil {
			return 0, fmt.Errorf("aggregation %s names no approval: %w", id, err)
		}
		es, err := st.db.Entries(ctx, custody.Query{Kind: custody.KindApprovalRequest, Trace: "mesh-" + id, Limit: 2})
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
func demoThread(ctx context.Context, st *stack, id string) error {
	es, err := st.db.Entries(ctx, custody.Query{Refs: map[string]string{mesh.RefApproval: id}, Limit: 1000})
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
