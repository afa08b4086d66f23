package brain

import (
	"context"
	"sync"
	"testing"
)

func TestBuildExampleValidatesForEveryJob(t *testing.T) {
	r := exampleRoom(t)
	reg := registry(t)
	for _, job := range Jobs() {
		t.Run(job, func(t *testing.T) {
			p := build(t, r, BuildOptions{Job: job, Focus: "claim-core"})
			raw := marshal(t, p)
			if err := reg.Validate(InRef(job), raw); err != nil {
				t.Fatalf("packet does not validate: %v\n%s", err, raw)
			}
		})
	}
	t.Log(string(marshal(t, build(t, r, BuildOptions{Job: "suggest_next_move", Focus: "claim-core"}))))
}

func TestBuildRefusesUnknownJobAndFocus(t *testing.T) {
	r := exampleRoom(t)
	tests := []struct {
		name, job, focus, kind string
	}{
		{"ErrUnknownJob", "write_poem", "claim-core", "invalid"},
		{"ErrUnknownFocus", "suggest_next_move", "nope", "not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.Build(context.Background(), BuildOptions{Job: tt.job, Focus: tt.focus})
			if kindOf(err) != tt.kind {
				t.Fatalf("err = %v, want kind %s", err, tt.kind)
			}
		})
	}
}

// TestBuildConcurrently builds packets from many goroutines while the
// room changes, for the race detector.
func TestBuildConcurrently(t *testing.T) {
	r := exampleRoom(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 10 {
				job := Jobs()[(i+j)%len(Jobs())]
				if _, err := r.Build(ctx, BuildOptions{Job: job, Focus: "claim-core"}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	for i := range 5 {
		_, err := r.db.ExecContext(ctx, `UPDATE nodes SET properties = json_set(properties, '$.hsi', ?) WHERE id = 'opp-dental'`, 40+i)
		if err != nil {
			t.Error(err)
		}
	}
	wg.Wait()
}
