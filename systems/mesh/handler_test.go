package mesh

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/systems"
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

// TestSystemNeedsASimulator: a mesh neither joined over NATS nor given a
// simulator refuses to run, and a plugin built without the simulator
// refuses --simulate.
func TestSystemNeedsASimulator(t *testing.T) {
	if err := New(Deps{}).Run(context.Background()); custody.ErrorKind(err) != custody.EINVALID {
		t.Errorf("run without a simulator: %v, want invalid", err)
	}
	set := systems.Settings{Systems: []string{"mesh"}, Simulate: true}
	if _, err := (Plugin{}).Deps(systems.Core{}, set); !errors.Is(err, errNoSimulator) {
		t.Errorf("deps without a simulator: %v, want %v", err, errNoSimulator)
	}
}
