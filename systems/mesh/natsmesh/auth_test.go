package natsmesh

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/systems/mesh"
)

// quietAdvisory is the signed info advisory of node id, as its node
// composes it.
func quietAdvisory(t *testing.T, k keys, subjects mesh.Subjects, id string) mesh.Msg {
	t.Helper()
	r := mesh.SensorReading{ThermalMaxC: mesh.Float(25), ThermalAreaM2: mesh.Float(0), HumidityPct: mesh.Float(40), WindSpeedMS: mesh.Float(3), WindGustMS: mesh.Float(4)}
	n, err := mesh.NewNode(mesh.NodeConfig{ID: id, Position: mesh.Position{MGRS: "11SKU1234567890"},
		Sensor: mesh.SensorFunc(func(context.Context, time.Time) (mesh.SensorReading, mesh.Conditions, error) {
			return r, mesh.Conditions{}, nil
		})})
	if err != nil {
		t.Fatal(err)
	}
	adv, raw, _, err := n.Advise(context.Background(), time.Now(), r, mesh.Conditions{})
	if err != nil || adv.DetectorState.Tier != mesh.Info {
		t.Fatalf("advise: %v (%s)", err, adv.DetectorState.Tier)
	}
	m, err := k.ids[id].Sign(subjects.Advisory(id), raw)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// forgedAggregation is an aggregation of forward-ridge-1 at severity
// critical, signed with the aggregator's own key.
func forgedAggregation(t *testing.T, k keys, subjects mesh.Subjects) (mesh.Msg, string) {
	t.Helper()
	id := "8f6f2a4e-3c1b-4d2a-9e1f-0a1b2c3d4e5f"
	raw, err := json.Marshal(mesh.Aggregation{
		SchemaVersion: "PEAS-MESH-AGGREGATION-v1", AggregationTS: time.Now().UTC().Format(time.RFC3339),
		InputNodeIDs: []string{"forward-ridge-1"}, SeverityTier: mesh.Critical, ApprovalRequestID: id,
		AggregationText: "Sector 11SKU, 1 nodes, severity critical. Reported: forward-ridge-1 (critical).",
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := k.ids["aggregator"].Sign(subjects.Aggregation("11SKU"), raw)
	if err != nil {
		t.Fatal(err)
	}
	return m, id
}

// TestNATSDeskRefusesForgedAggregation checks, across a real server, that
// the desk re-checks an aggregation against the advisories it saw: a
// critical aggregation over an info advisory is refused even when the
// aggregator's own key signed it, and an advisory from a key outside the
// roster never reaches the desk's book.
func TestNATSDeskRefusesForgedAggregation(t *testing.T) {
	url := natsURL(t)
	t.Setenv(envNodeURL, url)
	prefix := uniquePrefix(t)
	subjects := mesh.Subjects{Prefix: prefix}
	ctx := context.Background()
	k := newKeys(t, "forward-ridge-1")
	st := newStack(t)
	desk := mesh.NewDesk(mesh.DeskConfig{Wire: k.wire(dial(t, url, prefix, "desk-"+prefix), st, "desk"), Subjects: subjects, Approvals: st.approvals})
	if _, err := desk.Listen(ctx); err != nil {
		t.Fatal(err)
	}
	pub := dial(t, url, prefix, "")

	stranger := newKeys(t, "forward-ridge-2")
	if err := pub.Publish(ctx, quietAdvisory(t, stranger, subjects, "forward-ridge-2")); err != nil {
		t.Fatal(err)
	}
	if err := pub.Publish(ctx, quietAdvisory(t, k, subjects, "forward-ridge-1")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the desk admits forward-ridge-1's advisory", func() bool { return len(desk.Book().Nodes()) == 1 })
	if n := desk.Book().Nodes()[0]; n.Advisory.NodeID != "forward-ridge-1" {
		t.Fatalf("the desk admitted %s", n.Advisory.NodeID)
	}

	forged, id := forgedAggregation(t, k, subjects)
	if err := pub.Publish(ctx, forged); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the desk refuses the forged aggregation", func() bool {
		es, _ := st.db.Entries(ctx, custody.Query{Kind: mesh.EntryRefused, Refs: map[string]string{"mesh_kind": "aggregation"}})
		return len(es) == 1
	})
	if _, err := desk.Case(id); err == nil {
		t.Fatal("the forged aggregation is on the desk")
	}
	if _, err := st.approvals.Get(ctx, id); custody.ErrorKind(err) != custody.ENOTFOUND {
		t.Fatalf("the forged aggregation opened an approval: %v", err)
	}
	es, _ := st.db.Entries(ctx, custody.Query{Kind: mesh.EntryRefused, Refs: map[string]string{"mesh_kind": "advisory"}})
	if len(es) != 1 {
		t.Fatalf("%d advisory refusals recorded, want the stranger's", len(es))
	}
}

// TestNATSTwoDeploymentsApart checks that two deployments on one server,
// each with its own subject prefix and consumer name, see only their own
// aggregations, and that each desk's durable consumer gets all of its
// own deployment's.
func TestNATSTwoDeploymentsApart(t *testing.T) {
	url := natsURL(t)
	t.Setenv(envNodeURL, url)
	ctx := context.Background()
	k := newKeys(t, "forward-ridge-1")
	type deployment struct {
		subjects mesh.Subjects
		st       stack
		desk     *mesh.Desk
		pub      *Transport
	}
	var ds [2]*deployment
	for i := range ds {
		prefix := uniquePrefix(t)
		d := &deployment{subjects: mesh.Subjects{Prefix: prefix}, st: newStack(t)}
		d.desk = mesh.NewDesk(mesh.DeskConfig{Wire: k.wire(dial(t, url, prefix, "custody-desk-"+prefix), d.st, "desk"),
			Subjects: d.subjects, Approvals: d.st.approvals, AdvisoryWait: 100 * time.Millisecond})
		if _, err := d.desk.Listen(ctx); err != nil {
			t.Fatal(err)
		}
		d.pub = dial(t, url, prefix, "")
		ds[i] = d
	}
	a := ds[0]
	if err := a.pub.Publish(ctx, quietAdvisory(t, k, a.subjects, "forward-ridge-1")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "deployment A's desk admits the advisory", func() bool { return len(a.desk.Book().Nodes()) == 1 })
	forged, id := forgedAggregation(t, k, a.subjects)
	if err := a.pub.Publish(ctx, forged); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "deployment A's desk hears the aggregation", func() bool {
		es, _ := a.st.db.Entries(ctx, custody.Query{Refs: map[string]string{"mesh_kind": "aggregation"}})
		return len(es) == 1
	})
	time.Sleep(300 * time.Millisecond) // what B would have got by now
	b := ds[1]
	if n := len(b.desk.Book().Nodes()); n != 0 {
		t.Fatalf("deployment B saw %d of A's advisories", n)
	}
	if es, _ := b.st.db.Entries(ctx, custody.Query{}); len(es) != 0 {
		t.Fatalf("deployment B recorded %d entries of A's messages, first %+v", len(es), es[0])
	}
	if _, err := b.desk.Case(id); err == nil {
		t.Fatal("deployment B holds A's aggregation")
	}
}
