package mesh

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/store/sqlite"
	"github.com/custody-dev/custody/systems/peas"

	"github.com/custody-dev/custody/internal/testclock"
)

// testClock is an injected clock that only moves when told.
func newClock() *testclock.Clock {
	return testclock.New(time.Date(2026, 7, 14, 14, 0, 0, 0, time.UTC))
}

// testEnv is a real stack: the PEAS contract, SQLite in a temp dir,
// the approval service and a loopback transport.
type testEnv struct {
	clock     *testclock.Clock
	reg       *contract.Registry
	db        *sqlite.DB
	approvals *approval.Service
	loop      *Loopback
	// roster admits every identity the env made; ids holds them by name.
	roster *Roster
	ids    map[string]*Identity
}

func newEnv(t testing.TB) *testEnv {
	t.Helper()
	reg, err := contract.Load(contract.Options{Contracts: []contract.Source{peas.Contract()}})
	if err != nil {
		t.Fatalf("load contracts: %v", err)
	}
	clock := newClock()
	db, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.Options{Now: clock.Now})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	svc, err := approval.New(approval.Config{Store: db, Ledger: db, Now: clock.Now})
	if err != nil {
		t.Fatalf("approval service: %v", err)
	}
	roster, _ := NewRoster()
	return &testEnv{clock: clock, reg: reg, db: db, approvals: svc, loop: NewLoopback(Faults{}), roster: roster, ids: map[string]*Identity{}}
}

// wire returns a wire on the env's roster, signing as actor: a forward
// node, "aggregator" or "desk" (admitted on first use); any other actor
// (an audience) only receives.
func (e *testEnv) wire(actor string) *Wire {
	return &Wire{Transport: e.loop, Validator: e.reg, Ledger: e.db, Actor: actor, Now: e.clock.Now, Identity: e.identity(actor), Roster: e.roster}
}

// identity returns the admitted identity of name, made on first use;
// nil for a name that has no role.
func (e *testEnv) identity(name string) *Identity {
	if id, ok := e.ids[name]; ok {
		return id
	}
	var role Role
	switch {
	case strings.HasPrefix(name, "forward-"):
		role = RoleNode
	case name == "aggregator", strings.HasPrefix(name, "aggregator-"):
		role = RoleAggregator
	case name == "desk":
		role = RoleDesk
	default:
		return nil
	}
	id, err := NewIdentity(name, role)
	if err != nil {
		panic(err)
	}
	if err := e.roster.Admit(id.Member); err != nil {
		panic(err)
	}
	e.ids[name] = id
	return id
}

// signed returns raw on subject signed by name's identity.
func (e *testEnv) signed(name, subject string, raw []byte) Msg {
	m, err := e.identity(name).sign(subject, raw)
	if err != nil {
		panic(err)
	}
	return m
}

// entries returns the ledger entries of one kind.
func (e *testEnv) entries(t testing.TB, kind string, refs map[string]string) []custody.Entry {
	t.Helper()
	es, err := e.db.Entries(context.Background(), custody.Query{Kind: kind, Refs: refs, Limit: 100000})
	if err != nil {
		t.Fatalf("ledger entries: %v", err)
	}
	return es
}

// fixedSensor returns the same reading and conditions every cycle.
func fixedSensor(r SensorReading, c Conditions) Sensor {
	return SensorFunc(func(context.Context, time.Time) (SensorReading, Conditions, error) { return r, c, nil })
}

// clear is a benign full reading.
func clearReading() SensorReading {
	return SensorReading{
		ThermalMaxC: Float(24), ThermalAreaM2: Float(0), AmbientC: Float(21), HumidityPct: Float(40),
		WindSpeedMS: Float(3), WindGustMS: Float(5), WindDirDeg: Float(270),
	}
}

// fireReading is an active fire in fire weather: emergency.
func fireReading() SensorReading {
	r := clearReading()
	r.ThermalMaxC, r.ThermalAreaM2, r.HumidityPct, r.WindSpeedMS = Float(420), Float(35), Float(9), Float(12.5)
	return r
}

// hotReading is a hot spot in calm air: warning.
func hotReading() SensorReading {
	r := clearReading()
	r.ThermalMaxC, r.ThermalAreaM2 = Float(180), Float(2)
	return r
}

// advisoryOf composes the advisory of a node with the template.
func (e *testEnv) advisoryOf(t testing.TB, id, mgrs string, r SensorReading, c Conditions) (Advisory, []byte) {
	t.Helper()
	n, err := NewNode(NodeConfig{ID: id, Position: Position{MGRS: mgrs, Lat: Float(34.1), Lon: Float(-118.2)}, Sensor: fixedSensor(r, c), Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	adv, raw, _, err := n.Advise(context.Background(), e.clock.Now(), r, c)
	if err != nil {
		t.Fatalf("advise %s: %v", id, err)
	}
	return adv, raw
}
