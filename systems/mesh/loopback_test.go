package mesh

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestLoopbackFaults(t *testing.T) {
	ctx := context.Background()
	collect := func(l *Loopback) *[]string {
		var got []string
		if _, err := l.Subscribe("mesh.advisory.*", func(_ context.Context, m Msg) { got = append(got, string(m.Data)) }); err != nil {
			t.Fatal(err)
		}
		return &got
	}
	publish := func(l *Loopback, n int) []string {
		var sent []string
		for i := range n {
			s := fmt.Sprint(i)
			sent = append(sent, s)
			_ = l.Publish(ctx, Msg{Subject: "mesh.advisory.forward-a-1", Data: []byte(s)})
		}
		return sent
	}
	t.Run("NoFaults", func(t *testing.T) {
		l := NewLoopback(Faults{})
		got := collect(l)
		if sent := publish(l, 50); !slices.Equal(*got, sent) {
			t.Fatalf("got %v", *got)
		}
	})
	t.Run("Loss", func(t *testing.T) {
		l := NewLoopback(Faults{Loss: 0.3, Seed: 7})
		got := collect(l)
		publish(l, 1000)
		if n := len(*got); n+l.Dropped() != 1000 || n < 600 || n > 800 {
			t.Fatalf("delivered %d, dropped %d", n, l.Dropped())
		}
	})
	t.Run("Reorder", func(t *testing.T) {
		l := NewLoopback(Faults{Reorder: 8, Seed: 3})
		got := collect(l)
		sent := publish(l, 20)
		l.Flush(ctx)
		if len(*got) != 20 || slices.Equal(*got, sent) {
			t.Fatalf("got %v", *got)
		}
		back := slices.Clone(*got)
		slices.Sort(back)
		want := slices.Clone(sent)
		slices.Sort(want)
		if !slices.Equal(back, want) {
			t.Fatalf("reordering lost or duplicated messages: %v", *got)
		}
	})
	t.Run("Delay", func(t *testing.T) {
		l := NewLoopback(Faults{Delay: 5 * time.Millisecond})
		done := make(chan struct{})
		_, _ = l.Subscribe("mesh.>", func(context.Context, Msg) { close(done) })
		_ = l.Publish(ctx, Msg{Subject: "mesh.advisory.forward-a-1", Data: []byte("x")})
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("delayed message never delivered")
		}
	})
}

func TestReorderedAdvisoriesKeepLatest(t *testing.T) {
	env := newEnv(t)
	a, _ := newTestAggregator(env)
	_, older := env.advisoryOf(t, "forward-ridge-1", "11SKU1234567890", fireReading(), Conditions{})
	env.clock.Add(30 * time.Second)
	_, newer := env.advisoryOf(t, "forward-ridge-1", "11SKU1234567890", clearReading(), Conditions{})
	for _, raw := range [][]byte{newer, older} {
		if _, err := a.Receive(context.Background(), env.signed("forward-ridge-1", "mesh.advisory.forward-ridge-1", raw)); err != nil {
			t.Fatal(err)
		}
	}
	if n := a.Nodes()[0]; n.Advisory.DetectorState.Tier != Info {
		t.Fatalf("an older advisory replaced the latest: %s", n.Advisory.DetectorState.Tier)
	}
}

func TestMatchSubject(t *testing.T) {
	tests := []struct {
		pattern, subject string
		want             bool
	}{
		{"mesh.advisory.*", "mesh.advisory.forward-a", true},
		{"mesh.advisory.*", "mesh.advisory.forward-a.x", false},
		{"mesh.>", "mesh.advisory.forward-a", true},
		{"mesh.>", "mesh", false},
		{"mesh.broadcast.ops_center", "mesh.broadcast.ops_center", true},
		{"mesh.broadcast.ops_center", "mesh.broadcast.ground_crew_alpha", false},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+"~"+tt.subject, func(t *testing.T) {
			if got := matchSubject(tt.pattern, tt.subject); got != tt.want {
				t.Fatalf("got %v", got)
			}
		})
	}
}
