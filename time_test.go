package custody

import (
	"testing"
	"time"
)

// TestFormatTime: any instant in any zone is written in UTC with exactly
// six fractional digits, truncated, not rounded.
func TestFormatTime(t *testing.T) {
	west := time.FixedZone("west", -(9*3600 + 30*60))
	for _, c := range []struct {
		in   time.Time
		want string
	}{
		{time.Time{}, "0001-01-01T00:00:00.000000Z"},
		{time.Date(2024, 2, 29, 12, 0, 0, 1000, time.UTC), "2024-02-29T12:00:00.000001Z"},
		{time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), "9999-12-31T23:59:59.999999Z"},
		{time.Date(2026, 12, 31, 20, 0, 0, 0, west), "2027-01-01T05:30:00.000000Z"},
	} {
		if got := FormatTime(c.in); got != c.want {
			t.Errorf("FormatTime(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}
