package natsmesh

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/store/sqlite"
	"github.com/custody-dev/custody/systems/mesh"
	"github.com/custody-dev/custody/systems/peas"
)

// Environment of the node process the end-to-end test starts.
const (
	envNodeURL    = "CUSTODY_MESH_NODE_URL"
	envNodePrefix = "CUSTODY_MESH_NODE_PREFIX"
	envNodeKey    = "CUSTODY_MESH_NODE_KEY"
)

// natsURL returns the server of CUSTODY_TEST_NATS_URL, or starts an
// embedded one with JetStream in a temp dir.
func natsURL(t *testing.T) string {
	t.Helper()
	if u := os.Getenv("CUSTODY_TEST_NATS_URL"); u != "" {
		return u
	}
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatalf("embedded nats-server: %v", err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("embedded nats-server did not start")
	}
	t.Cleanup(s.Shutdown)
	return s.ClientURL()
}

func uniquePrefix(t *testing.T) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	p := "t" + hex.EncodeToString(b[:])
	t.Cleanup(func() { deleteStreams(p) })
	return p
}

func deleteStreams(prefix string) {
	nc, err := nats.Connect(os.Getenv(envNodeURL))
	if err != nil {
		return
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	tr := &Transport{cfg: Config{Subjects: mesh.Subjects{Prefix: prefix}}}
	a, m := tr.streamNames()
	_ = js.DeleteStream(context.Background(), a)
	_ = js.DeleteStream(context.Background(), m)
}

type stack struct {
	reg       *contract.Registry
	db        *sqlite.DB
	approvals *approval.Service
}

func newStack(t testing.TB) stack {
	reg, err := contract.Load(contract.Options{Contracts: []contract.Source{peas.Contract()}})
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc, err := approval.New(approval.Config{Store: db, Ledger: db})
	if err != nil {
		t.Fatal(err)
	}
	return stack{reg, db, svc}
}

func dial(t *testing.T, url, prefix, durable string) *Transport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tr, err := Dial(ctx, Config{URL: url, Name: durable, Subjects: mesh.Subjects{Prefix: prefix}, Durable: durable})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

// TestNodeProcess is the forward node of TestNATSEndToEnd, run in its own
// process by re-executing the test binary. It skips when run directly.
func TestNodeProcess(t *testing.T) {
	url, prefix, keyFile := os.Getenv(envNodeURL), os.Getenv(envNodePrefix), os.Getenv(envNodeKey)
	if url == "" || prefix == "" || keyFile == "" {
		t.Skip("runs only as the node process of TestNATSEndToEnd")
	}
	key, err := mesh.LoadIdentity("forward-ridge-1", mesh.RoleNode, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	st := newStack(t)
	tr := dial(t, url, prefix, "")
	subjects := mesh.Subjects{Prefix: prefix}
	readings := []mesh.SensorReading{
		{ThermalMaxC: mesh.Float(25), ThermalAreaM2: mesh.Float(0), HumidityPct: mesh.Float(40), WindSpeedMS: mesh.Float(3), WindGustMS: mesh.Float(4)},
		{ThermalMaxC: mesh.Float(420), ThermalAreaM2: mesh.Float(40), HumidityPct: mesh.Float(9), WindSpeedMS: mesh.Float(12), WindGustMS: mesh.Float(17)},
	}
	i := 0
	n, err := mesh.NewNode(mesh.NodeConfig{
		ID: "forward-ridge-1", Position: mesh.Position{MGRS: "11SKU1234567890", Lat: mesh.Float(34.2), Lon: mesh.Float(-118.1)},
		Subjects: subjects, Wire: &mesh.Wire{Transport: tr, Validator: st.reg, Ledger: st.db, Actor: "forward-ridge-1", Identity: key},
		Sensor: mesh.SensorFunc(func(context.Context, time.Time) (mesh.SensorReading, mesh.Conditions, error) {
			r := readings[i]
			i++
			return r, mesh.Conditions{}, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	for range readings {
		if _, _, err := n.Cycle(context.Background()); err != nil {
			t.Fatalf("cycle: %v", err)
		}
	}
}

func TestNATSEndToEnd(t *testing.T) {
	url := natsURL(t)
	t.Setenv(envNodeURL, url)
	prefix := uniquePrefix(t)
	subjects := mesh.Subjects{Prefix: prefix}
	ctx := context.Background()

	// Keys are made as custody mesh keygen makes them: the node's seed in
	// a file of its own, every public key on the roster.
	keys := newKeys(t, "forward-ridge-1")
	keyFile := filepath.Join(t.TempDir(), "forward-ridge-1.nk")
	if err := keys.ids["forward-ridge-1"].WriteSeed(keyFile); err != nil {
		t.Fatal(err)
	}

	// The node runs and exits before any aggregator listens: its advisory
	// must survive in JetStream.
	cmd := exec.Command(os.Args[0], "-test.run=^TestNodeProcess$", "-test.v")
	cmd.Env = append(os.Environ(), envNodeURL+"="+url, envNodePrefix+"="+prefix, envNodeKey+"="+keyFile)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node process: %v\n%s", err, out)
	}

	st := newStack(t)
	aggregated := make(chan mesh.Aggregation, 4)
	agg := mesh.NewAggregator(mesh.AggregatorConfig{
		Wire: keys.wire(dial(t, url, prefix, ""), st, "aggregator"), Subjects: subjects,
		OnAggregation: func(a mesh.Aggregation, _ []byte, _ string) { aggregated <- a },
	})
	if _, err := agg.Listen(ctx); err != nil {
		t.Fatal(err)
	}
	var a mesh.Aggregation
	select {
	case a = <-aggregated:
	case <-time.After(15 * time.Second):
		t.Fatal("no aggregation within 15 s")
	}
	if a.SeverityTier != mesh.Emergency || len(a.InputNodeIDs) != 1 || a.InputNodeIDs[0] != "forward-ridge-1" {
		t.Fatalf("aggregation %+v", a)
	}

	// The desk connects after the aggregation was published: its durable
	// consumer still receives it.
	desk := mesh.NewDesk(mesh.DeskConfig{Wire: keys.wire(dial(t, url, prefix, "desk-"+prefix), st, "desk"),
		Subjects: subjects, Approvals: st.approvals})
	if _, err := desk.Listen(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "desk receives the aggregation", func() bool { _, err := desk.Case(a.ApprovalRequestID); return err == nil })

	crew := &mesh.Receiver{Audience: "ground_crew_bravo", Subjects: subjects, Approvals: st.approvals,
		Wire: keys.wire(dial(t, url, prefix, "bravo-"+prefix), st, "ground_crew_bravo")}
	if _, err := crew.Listen(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := desk.Approve(ctx, mesh.Form{ApprovalRequestID: a.ApprovalRequestID, OperatorID: "op-1", Audiences: []string{"ground_crew_bravo"}, Tier: mesh.Critical}); err != nil {
		t.Fatalf("approve: %v", err)
	}
	waitFor(t, "the crew receives the broadcast", func() bool { return len(crew.Accepted()) == 1 })
	if b := crew.Accepted()[0]; b.ApprovalRequestID != a.ApprovalRequestID || b.SeverityTier != mesh.Critical {
		t.Fatalf("broadcast %+v", b)
	}
}

// keys are the identities of a test mesh and the roster admitting them:
// the nodes named, an aggregator and a desk.
type keys struct {
	ids    map[string]*mesh.Identity
	roster *mesh.Roster
}

func newKeys(t *testing.T, nodes ...string) keys {
	t.Helper()
	k := keys{ids: map[string]*mesh.Identity{}}
	var members []mesh.Member
	add := func(name string, role mesh.Role) {
		id, err := mesh.NewIdentity(name, role)
		if err != nil {
			t.Fatal(err)
		}
		k.ids[name] = id
		members = append(members, id.Member)
	}
	for _, n := range nodes {
		add(n, mesh.RoleNode)
	}
	add("aggregator", mesh.RoleAggregator)
	add("desk", mesh.RoleDesk)
	r, err := mesh.NewRoster(members...)
	if err != nil {
		t.Fatal(err)
	}
	k.roster = r
	return k
}

// wire returns a wire on tr for actor, signing with its key when it has one.
func (k keys) wire(tr mesh.Transport, st stack, actor string) *mesh.Wire {
	return &mesh.Wire{Transport: tr, Validator: st.reg, Ledger: st.db, Actor: actor, Identity: k.ids[actor], Roster: k.roster}
}

// waitFor polls cond until it holds; messages cross a real server here.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
