package sim

import (
	"context"
	"testing"
	"time"

	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/internal/testclock"
	"github.com/custody-dev/custody/store/sqlite"
	"github.com/custody-dev/custody/systems/mesh"
	"github.com/custody-dev/custody/systems/peas"
)

// testEnv is a real stack: the PEAS contract, SQLite in a temp dir on an
// injected clock that only moves when told, the approval service and a
// loopback transport.
type testEnv struct {
	clock     *testclock.Clock
	reg       *contract.Registry
	db        *sqlite.DB
	approvals *approval.Service
	loop      *mesh.Loopback
}

func newEnv(t testing.TB) *testEnv {
	t.Helper()
	reg, err := contract.Load(contract.Options{Contracts: []contract.Source{peas.Contract()}})
	if err != nil {
		t.Fatalf("load contracts: %v", err)
	}
	clock := testclock.New(time.Date(2026, 7, 14, 14, 0, 0, 0, time.UTC))
	db, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.Options{Now: clock.Now})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	svc, err := approval.New(approval.Config{Store: db, Ledger: db, Now: clock.Now})
	if err != nil {
		t.Fatalf("approval service: %v", err)
	}
	return &testEnv{clock: clock, reg: reg, db: db, approvals: svc, loop: mesh.NewLoopback(mesh.Faults{})}
}
