package mesh

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody"
)

func TestHandlerStateAndBroadcast(t *testing.T) {
	f := newDeskFixture(t)
	sys := New(Deps{})
	sys.set(f.agg, f.desk, "test")
	srv := httptest.NewServer(sys.Handler())
	defer srv.Close()

	page := get(t, srv.URL+"/apps/mesh/")
	if !strings.Contains(page, "Mesh map") {
		t.Fatal("map page not served")
	}
	var st state
	if err := json.Unmarshal([]byte(get(t, srv.URL+"/apps/mesh/api/state")), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Nodes) != 2 || len(st.Cases) < 2 || len(st.Audiences) != 5 {
		t.Fatalf("state: %d nodes, %d cases, %d audiences", len(st.Nodes), len(st.Cases), len(st.Audiences))
	}
	id := f.critical.ApprovalRequestID
	tests := []struct {
		name   string
		body   string
		status int
	}{
		{"InfoAggregation", `{"approval_request_id":"` + f.infoAggID + `","operator_id":"op","target_audience":["ops_center"],"severity_tier":"warning"}`, http.StatusForbidden},
		{"UnknownField", `{"approval_request_id":"` + id + `","operator":"op"}`, http.StatusBadRequest},
		// The operator endpoints read as strictly as every door: a second
		// tier must not win over the first.
		{"DuplicateTier", `{"approval_request_id":"` + id + `","operator_id":"op","target_audience":["ops_center"],"severity_tier":"warning","severity_tier":"critical"}`, http.StatusBadRequest},
		{"CaseFoldedTier", `{"approval_request_id":"` + id + `","operator_id":"op","target_audience":["ops_center"],"severity_tier":"warning","SEVERITY_TIER":"critical"}`, http.StatusBadRequest},
		{"TrailingData", `{"approval_request_id":"` + id + `","operator_id":"op","target_audience":["ops_center"],"severity_tier":"critical"} {}`, http.StatusBadRequest},
		{"Approved", `{"approval_request_id":"` + id + `","operator_id":"op","target_audience":["ops_center"],"severity_tier":"critical"}`, http.StatusOK},
		{"Again", `{"approval_request_id":"` + id + `","operator_id":"op","target_audience":["ops_center"]}`, http.StatusConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.Post(srv.URL+"/apps/mesh/api/broadcast", "application/json", bytes.NewBufferString(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
		})
	}
	if len(f.ops.Accepted()) != 1 {
		t.Fatalf("ops received %d broadcasts", len(f.ops.Accepted()))
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}

func TestSystemRunsSimulation(t *testing.T) {
	env := newEnv(t)
	sys := New(Deps{Validator: env.reg, Ledger: env.db, Approvals: env.approvals, Speedup: 3000})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sys.Run(ctx) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		view, desk, _ := sys.current()
		if view != nil && len(view.Nodes()) == 12 && desk != nil && len(desk.Cases()) > 0 {
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
