package gate_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
)

// TestAwaitDecision covers the rule both front doors wait by, with the
// decision taken before, during or never: approved, the same call runs;
// declined, its refusal; undecided when the wait ends, the refusal that
// held it; the caller gone, call.cancelled naming the approval.
func TestAwaitDecision(t *testing.T) {
	call := custody.Call{Trace: "t-wait", Tool: "post_announcement", Args: json.RawMessage(post), Actor: "agent-1", Via: "test"}
	held := func(t *testing.T, h *harness) (string, error) {
		t.Helper()
		_, err := h.gw.Call(context.Background(), call)
		id, _ := h.gw.Held(call, err)
		if id == "" {
			t.Fatalf("Held(%v) names no approval", err)
		}
		return id, err
	}
	t.Run("Approved", func(t *testing.T) {
		h := newHarness(t)
		id, err := held(t, h)
		h.decide(t, id, approval.Approve, nil)
		res, err := h.gw.AwaitDecision(context.Background(), call, id, time.Hour, err)
		if err != nil || h.ran("post_announcement") != 1 {
			t.Fatalf("the approved call: %+v, %v; ran %d times", res, err, h.ran("post_announcement"))
		}
	})
	t.Run("Declined", func(t *testing.T) {
		h := newHarness(t)
		id, err := held(t, h)
		h.decide(t, id, approval.Decline, nil)
		_, err = h.gw.AwaitDecision(context.Background(), call, id, time.Hour, err)
		h.wantRefused(t, err, custody.EDENIED)
	})
	t.Run("Undecided", func(t *testing.T) {
		h := newHarness(t)
		id, first := held(t, h)
		_, err := h.gw.AwaitDecision(context.Background(), call, id, time.Millisecond, first)
		if err != first {
			t.Fatalf("undecided after the wait: %v, want the refusal that held it", err)
		}
	})
	t.Run("CallerGone", func(t *testing.T) {
		h := newHarness(t)
		id, err := held(t, h)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = h.gw.AwaitDecision(ctx, call, id, time.Hour, err)
		if e := h.wantOutcome(t, err, custody.EUNAVAILABLE, custody.KindCallCancelled); e.Refs[approval.RefApproval] != id {
			t.Fatalf("the abandoned wait is recorded with refs %v, want call.cancelled naming %s", e.Refs, id)
		}
		if a, _ := h.svc.Get(context.Background(), id); a.Status != custody.ApprovalPending {
			t.Fatalf("approval after the caller left: %s, want still pending", a.Status)
		}
	})
}
