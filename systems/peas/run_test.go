package peas_test

import (
	"context"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/systems/llm"
	"github.com/custody-dev/custody/systems/peas"
)

// TestRunLiveFeed: the feed replays every corridor's scenario; the fog and
// whiteout chains wait for their approvals, the calm corridor never
// reaches a brief, and an approval decided while the feed runs carries
// its chain on to the sign and the cars.
func TestRunLiveFeed(t *testing.T) {
	s := newStack(t, llm.Router{}, func(d *peas.Deps) { d.Interval = 10 * time.Millisecond })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.sys.Run(ctx, s.gw) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	pending := waitFor(t, func() []custody.Approval {
		as, _ := s.approvals.List(context.Background(), custody.ApprovalPending)
		if len(as) < 2 {
			return nil
		}
		return as
	})
	for _, a := range pending {
		s.decide(t, a.ID, approval.Approve, nil)
	}
	waitFor(t, func() []peas.CorridorStatus {
		cs, _ := s.sys.Corridors(context.Background())
		for _, c := range cs[:2] {
			if c.Chain == nil || c.Chain.Stage != peas.StageNotified {
				return nil
			}
		}
		return cs
	})
	cs, _ := s.sys.Corridors(context.Background())
	if cs[2].Chain == nil || cs[2].Chain.Stage != peas.StageWatch || cs[2].Brief != nil {
		t.Fatalf("calm corridor = %+v, want watch without a brief", cs[2].Chain)
	}
	signs, _ := s.sys.Signs(context.Background())
	if signs[0].State != peas.SignPosted || signs[1].State != peas.SignPosted || signs[2].State != peas.SignBlank {
		t.Fatalf("signs = %+v", signs)
	}
}

// waitFor polls f until it returns a non-nil value, for up to 10 s.
func waitFor[T any](t *testing.T, f func() []T) []T {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if v := f(); v != nil {
			return v
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("timed out")
	return nil
}
