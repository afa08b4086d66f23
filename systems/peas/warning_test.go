package peas_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/systems/llm"
	"github.com/custody-dev/custody/systems/peas"
)

// TestWarningMatchesTheSign: an in-car warning may restate the approved
// sign, never contradict it with numbers, an all-clear or measurements
// the sign does not state.
func TestWarningMatchesTheSign(t *testing.T) {
	s := newStack(t, llm.Router{})
	ctx := context.Background()
	ch := s.pending(t)
	edited := `{"billboard_id":"` + sign + `","message":"SNOW AND ICE AHEAD. SLOW DOWN","duration_s":1800}`
	s.decide(t, ch.ApprovalID, approval.Approve, []byte(edited))
	if err := s.sys.Continue(ctx, s.gw, ch); err != nil || ch.VMSUpdateID == "" {
		t.Fatalf("chain: %v (%+v)", err, ch)
	}
	tests := []struct {
		name, text string
		ok         bool
	}{
		{"RestatesSign", "Snow and ice ahead. Slow down.", true},
		{"PlannerWording", "Warning from the sign ahead: snow and ice ahead. slow down", true},
		{"AllClearSpeedUp", "All clear, speed up to 80 mph", false},
		{"AllClearNoNumber", "All clear ahead, drive normally", false},
		{"InventedNumber", "Snow and ice in 2 miles. Slow down.", false},
		{"InventedMeasurement", "Heavy fog ahead. Slow down.", false},
		{"InventedPlace", "Snow and ice near Kalamazoo. Slow down.", false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := fmt.Sprintf(`{"vehicle_id":"veh-%d","vms_update_id":%q,"warning_text":%q}`, i, ch.VMSUpdateID, tt.text)
			_, err := s.call(ch.Trace, peas.ToolNotify, args)
			if tt.ok {
				if err != nil {
					t.Fatalf("warning %q refused: %v", tt.text, err)
				}
				return
			}
			s.refusedOnLedger(t, err, custody.EINVALID)
			if vs := custody.AsError(err).Violations; len(vs) == 0 || vs[0].Instance != "/warning_text" {
				t.Fatalf("violations %+v, want one at /warning_text", vs)
			}
		})
	}
}
