package sim

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/systems/mesh"
)

// TestSystemRunsSimulation: the mesh given the simulator brings up 12
// nodes and a desk with cases, and stamps the live ledger with the wall
// clock.
func TestSystemRunsSimulation(t *testing.T) {
	env := newEnv(t)
	sys := mesh.New(mesh.Deps{Validator: env.reg, Ledger: env.db, Approvals: env.approvals, Sim: Simulator{}, Speedup: 3000})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sys.Run(ctx) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := stateOf(t, sys)
		if len(st.Nodes) == 12 && len(st.Cases) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the simulated mesh did not come up")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The simulated clock runs far ahead at this speedup; the live ledger
	// is stamped with the wall clock all the same.
	es, err := env.db.Entries(context.Background(), custody.Query{})
	if err != nil {
		t.Fatal(err)
	}
	latest := custody.FormatTime(time.Now().Add(time.Second))
	for _, e := range es {
		if e.At > latest {
			t.Fatalf("entry %d (%s) is stamped %s, ahead of the wall clock", e.Seq, e.Kind, e.At)
		}
	}
}

// mapState is the part of the map's state the tests read.
type mapState struct {
	Nodes []mesh.NodeStatus `json:"nodes"`
	Cases []mesh.Case       `json:"cases"`
}

// stateOf reads what the map shows: the nodes of the system's view and
// the cases of its desk (none of either before they are built).
func stateOf(t *testing.T, sys *mesh.System) mapState {
	t.Helper()
	var st mapState
	rec := httptest.NewRecorder()
	sys.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/apps/mesh/api/state", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("state: %d %s", rec.Code, rec.Body)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatalf("state: %v", err)
	}
	return st
}
