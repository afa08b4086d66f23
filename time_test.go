package custody

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestFormatTime: the direct rendering is what the layout gives, for any
// instant and zone, and out-of-range years fall back to the layout.
func TestFormatTime(t *testing.T) {
	zones := []*time.Location{time.UTC, time.FixedZone("east", 14*3600), time.FixedZone("west", -(9*3600 + 30*60))}
	times := []time.Time{
		{}, time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 2, 29, 12, 0, 0, 1000, time.UTC),
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		times = append(times, time.Unix(r.Int64N(253402300800), r.Int64N(1e9)))
	}
	for i, tm := range times {
		tm = tm.In(zones[i%len(zones)])
		if got, want := FormatTime(tm), tm.UTC().Format(TimeFormat); got != want {
			t.Fatalf("FormatTime(%v) = %q, want %q", tm, got, want)
		}
	}
}
