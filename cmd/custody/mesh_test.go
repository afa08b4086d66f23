package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/config"
	"github.com/custody-dev/custody/systems"
	"github.com/custody-dev/custody/systems/mesh"
	"github.com/custody-dev/custody/systems/mesh/natsmesh"
)

// TestMeshKeygen checks that keygen writes a seed only its owner reads,
// admits the public key to the roster, and refuses a second member of the
// same name and role or a seed file that exists.
func TestMeshKeygen(t *testing.T) {
	dir := t.TempDir()
	roster := filepath.Join(dir, "roster.json")
	keygen := func(name, role, out string) (int, string, string) {
		return runWith("", func(m *Main) int {
			return m.Run(context.Background(), []string{"mesh", "keygen", "--name", name, "--role", role, "--out", filepath.Join(dir, out), "--roster", roster})
		})
	}
	if code, out, errs := keygen("forward-ridge-1", "node", "n1.nk"); code != exitOK {
		t.Fatalf("keygen node: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := keygen("aggregator", "aggregator", "agg.nk")
	if code != exitOK {
		t.Fatalf("keygen aggregator: exit %d\n%s%s", code, out, errs)
	}
	var printed mesh.Member
	if err := json.Unmarshal([]byte(out), &printed); err != nil || printed.Role != mesh.RoleAggregator {
		t.Fatalf("keygen printed %q (%v)", out, err)
	}
	fi, err := os.Stat(filepath.Join(dir, "n1.nk"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("seed file: %v, mode %v", err, fi.Mode())
	}
	r, err := mesh.LoadRoster(roster)
	if err != nil || len(r.Members()) != 2 {
		t.Fatalf("roster: %v %+v", err, r)
	}
	id, err := mesh.LoadIdentity("forward-ridge-1", mesh.RoleNode, filepath.Join(dir, "n1.nk"))
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := r.Member(id.PublicKey); !ok || m.Name != "forward-ridge-1" {
		t.Fatalf("the node's public key is not on the roster as itself: %+v", m)
	}
	refusals := []struct{ name, role, out string }{
		{"forward-ridge-1", "node", "again.nk"}, // a second key for one node
		{"forward-ridge-2", "node", "n1.nk"},    // an existing seed file
		{"ridge-2", "node", "bad.nk"},           // not a forward node id
		{"x", "operator", "role.nk"},            // no such role
	}
	for _, tt := range refusals {
		if code, _, _ := keygen(tt.name, tt.role, tt.out); code == exitOK {
			t.Errorf("keygen %s %s %s succeeded", tt.name, tt.role, tt.out)
		}
	}
	if r, err := mesh.LoadRoster(roster); err != nil || len(r.Members()) != 2 {
		t.Fatalf("refused keygens changed the roster: %v %d", err, len(r.Members()))
	}
	if _, err := os.Stat(filepath.Join(dir, "again.nk")); err == nil {
		t.Fatal("a refused keygen left a seed behind")
	}
}

// TestServeMeshSettings checks that the mesh's names and files come from
// the flags over the config file, and that without either two data
// directories get different subject prefixes and consumer names.
func TestServeMeshSettings(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "custody.json")
	if err := os.WriteFile(cfg, []byte(`{"mesh": {"roster": "r.json", "key": "desk.nk", "subjects": "mesh-east", "consumer": "desk-east"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var m Main
	m.Stdout, m.Stderr, m.Getenv = io.Discard, io.Discard, func(string) string { return "" }
	set, _, ok := m.serveFlags([]string{"--config", cfg, "--mesh-subjects", "mesh-west"})
	if !ok {
		t.Fatal("serve flags refused")
	}
	want := config.Mesh{Roster: "r.json", Key: "desk.nk", Subjects: "mesh-west", Consumer: "desk-east"}
	if set.mesh != want {
		t.Fatalf("mesh settings %+v, want %+v", set.mesh, want)
	}

	var names [2]config.Mesh
	for i := range names {
		st, err := m.openStack(context.Background(), filepath.Join(dir, "data"+string(rune('a'+i))), "")
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if names[i], err = meshNamesOf(t, st, config.Mesh{}); err != nil {
			t.Fatal(err)
		}
		if given, err := meshNamesOf(t, st, config.Mesh{Subjects: "mesh-x", Consumer: "desk-x"}); err != nil || given.Subjects != "mesh-x" || given.Consumer != "desk-x" {
			t.Fatalf("configured names not kept: %+v %v", given, err)
		}
		if _, err := meshNamesOf(t, st, config.Mesh{Subjects: "mesh.x.>"}); err == nil {
			t.Fatal("a prefix with wildcards was accepted")
		}
	}
	st, err := m.openStack(context.Background(), filepath.Join(dir, "datac"), "")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := meshDepsOf(st, systems.Settings{NATS: "nats://127.0.0.1:1", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}); err == nil {
		t.Fatal("joining over NATS without a roster and a desk key was accepted")
	}
	if names[0].Subjects == names[1].Subjects || names[0].Consumer == names[1].Consumer {
		t.Fatalf("two deployments share mesh names: %+v %+v", names[0], names[1])
	}
	if !strings.HasPrefix(names[0].Subjects, "mesh-") || !strings.HasPrefix(names[0].Consumer, "custody-desk-") {
		t.Fatalf("default names %+v", names[0])
	}
}

// TestServeMeshDeploymentsApart runs the desks of two serve deployments,
// each wired by meshDeps with its default names, on one real NATS server,
// and checks that an aggregation published to one reaches only that one.
func TestServeMeshDeploymentsApart(t *testing.T) {
	url := os.Getenv("CUSTODY_TEST_NATS_URL")
	if url == "" {
		t.Skip("CUSTODY_TEST_NATS_URL is not set")
	}
	dir := t.TempDir()
	keyDir := filepath.Join(dir, "keys")
	if err := os.Mkdir(keyDir, 0o700); err != nil {
		t.Fatal(err)
	}
	roster := filepath.Join(keyDir, "roster.json")
	node, agg := meshKey(t, keyDir, roster, "forward-ridge-1", mesh.RoleNode), meshKey(t, keyDir, roster, "aggregator", mesh.RoleAggregator)
	deskKey := filepath.Join(keyDir, "desk.nk")
	meshKey(t, keyDir, roster, "desk", mesh.RoleDesk)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var m Main
	var stderr bytes.Buffer
	m.Stdout, m.Stderr, m.Getenv = io.Discard, &stderr, func(string) string { return "" }
	type deployment struct {
		st   *stack
		deps mesh.Deps
		sys  *mesh.System
	}
	var ds [2]deployment
	for i := range ds {
		st, err := m.openStack(ctx, filepath.Join(dir, "data"+string(rune('a'+i))), "")
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		set := systems.Settings{NATS: url, Mesh: config.Mesh{Roster: roster, Key: deskKey}, Stderr: &stderr, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		deps, err := meshDepsOf(st, set)
		if err != nil {
			t.Fatal(err)
		}
		prefix := deps.Subjects.Prefix
		t.Cleanup(func() { deleteMeshStreams(url, prefix) })
		sys := mesh.New(deps)
		go func() { _ = sys.Run(ctx) }()
		ds[i] = deployment{st, deps, sys}
	}
	a, b := ds[0], ds[1]
	tr, err := natsmesh.Join(ctx, url, a.deps.Subjects.Prefix, "")
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	time.Sleep(500 * time.Millisecond) // both desks subscribed
	advisory := meshQuietAdvisory(t, node, a.deps.Subjects)
	if err := tr.Publish(ctx, advisory); err != nil {
		t.Fatal(err)
	}
	// Several aggregations: a consumer shared by the two desks would split
	// them between both.
	ids := []string{"0b9c1f6e-7d2a-4e3b-8c4d-5e6f7a8b9c0d", "1b9c1f6e-7d2a-4e3b-8c4d-5e6f7a8b9c0d", "2b9c1f6e-7d2a-4e3b-8c4d-5e6f7a8b9c0d",
		"3b9c1f6e-7d2a-4e3b-8c4d-5e6f7a8b9c0d", "4b9c1f6e-7d2a-4e3b-8c4d-5e6f7a8b9c0d", "5b9c1f6e-7d2a-4e3b-8c4d-5e6f7a8b9c0d"}
	for _, id := range ids {
		raw, _ := json.Marshal(mesh.Aggregation{
			SchemaVersion: "PEAS-MESH-AGGREGATION-v1", AggregationTS: time.Now().UTC().Format(time.RFC3339),
			InputNodeIDs: []string{"forward-ridge-1"}, SeverityTier: mesh.Info, ApprovalRequestID: id,
			AggregationText: "Sector 11SKU, 1 nodes, severity info. Reported: forward-ridge-1 (info).",
		})
		msg, err := agg.Sign(a.deps.Subjects.Aggregation("11SKU"), raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Publish(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for _, id := range ids {
		for {
			if _, err := a.st.approvals.Get(ctx, id); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("deployment A never filed aggregation %s; stderr:\n%s", id, stderr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	time.Sleep(500 * time.Millisecond) // what B would have got by now
	es, err := b.st.db.Entries(ctx, custody.Query{Refs: map[string]string{"mesh_kind": "aggregation"}})
	if err != nil || len(es) != 0 {
		t.Fatalf("deployment B recorded %d of A's aggregations (%v)", len(es), err)
	}
	rec := httptest.NewRecorder()
	b.sys.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/api/state", nil))
	var state struct {
		Nodes []json.RawMessage `json:"nodes"`
		Cases []json.RawMessage `json:"cases"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &state); err != nil || len(state.Nodes)+len(state.Cases) != 0 {
		t.Fatalf("deployment B's map shows A's mesh: %s (%v)", rec.Body.String(), err)
	}
}

// meshKey runs keygen for one participant and returns its identity.
func meshKey(t *testing.T, dir, roster, name string, role mesh.Role) *mesh.Identity {
	t.Helper()
	out := filepath.Join(dir, name+".nk")
	code, stdout, errs := runWith("", func(m *Main) int {
		return m.Run(context.Background(), []string{"mesh", "keygen", "--name", name, "--role", string(role), "--out", out, "--roster", roster})
	})
	if code != exitOK {
		t.Fatalf("keygen %s: exit %d\n%s%s", name, code, stdout, errs)
	}
	id, err := mesh.LoadIdentity(name, role, out)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// meshQuietAdvisory is forward-ridge-1's signed info advisory.
func meshQuietAdvisory(t *testing.T, key *mesh.Identity, subjects mesh.Subjects) mesh.Msg {
	t.Helper()
	r := mesh.SensorReading{ThermalMaxC: mesh.Float(25), ThermalAreaM2: mesh.Float(0), HumidityPct: mesh.Float(40), WindSpeedMS: mesh.Float(3), WindGustMS: mesh.Float(4)}
	n, err := mesh.NewNode(mesh.NodeConfig{ID: "forward-ridge-1", Position: mesh.Position{MGRS: "11SKU1234567890"},
		Sensor: mesh.SensorFunc(func(context.Context, time.Time) (mesh.SensorReading, mesh.Conditions, error) {
			return r, mesh.Conditions{}, nil
		})})
	if err != nil {
		t.Fatal(err)
	}
	_, raw, _, err := n.Advise(context.Background(), time.Now(), r, mesh.Conditions{})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := key.Sign(subjects.Advisory("forward-ridge-1"), raw)
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// deleteMeshStreams removes the streams a test deployment made.
func deleteMeshStreams(url, prefix string) {
	nc, err := nats.Connect(url)
	if err != nil {
		return
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return
	}
	base := strings.ToUpper(prefix)
	for _, name := range []string{base + "_ADVISORIES", base + "_MESSAGES"} {
		_ = js.DeleteStream(context.Background(), name)
	}
}

// meshNamesOf returns the mesh names of the deployment st is, from cfg.
func meshNamesOf(t *testing.T, st *stack, cfg config.Mesh) (config.Mesh, error) {
	t.Helper()
	id, err := ledgerIDOf(st)
	if err != nil {
		t.Fatal(err)
	}
	return mesh.Names(id, cfg)
}

// meshDepsOf wires the mesh to st as serve does.
func meshDepsOf(st *stack, set systems.Settings) (mesh.Deps, error) {
	id, err := ledgerIDOf(st)
	if err != nil {
		return mesh.Deps{}, err
	}
	core := systems.Core{Store: st.db, Registry: st.reg, Approvals: st.approvals, Gateway: st.gw, LedgerID: id, OperatorOf: operatorOf}
	return mesh.Plugin{NATS: natsmesh.Join}.Deps(core, set)
}
