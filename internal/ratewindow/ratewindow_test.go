package ratewindow_test

import (
	"testing"
	"time"

	"github.com/custody-dev/custody/internal/ratewindow"
)

// TestStale: a window is stale once a whole window of its own length has
// passed since it ended, never before; a key of another layout never is.
func TestStale(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC)
	key := func(every time.Duration, back int) string {
		return ratewindow.Key("agent", "a", "t", every, now.Truncate(every).Add(-time.Duration(back)*every))
	}
	tests := []struct {
		name  string
		key   string
		stale bool
	}{
		{"Current", key(time.Hour, 0), false},
		{"EndedLessThanAWindowAgo", key(time.Hour, 1), false},
		{"EndedAWindowAgo", key(time.Hour, 2), true},
		{"LongPast", key(time.Minute, 90), true},
		{"DayWindowYesterday", key(24*time.Hour, 1), false},
		{"ErrNotJSON", "not a window", false},
		{"ErrBadDuration", `["agent","a","t","soon","1"]`, false},
		{"ErrBadStart", `["agent","a","t","1h0m0s","noon"]`, false},
		{"ErrShort", `["agent","a"]`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ratewindow.Stale(tt.key, now); got != tt.stale {
				t.Errorf("Stale(%s) = %v, want %v", tt.key, got, tt.stale)
			}
		})
	}
}

// TestWindowRoundTrip: Window reads back what Key wrote.
func TestWindowRoundTrip(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s, every, ok := ratewindow.Window(ratewindow.Key("trace", "t-1", "pay", 90*time.Minute, start))
	if !ok || !s.Equal(start) || every != 90*time.Minute {
		t.Fatalf("Window = %s, %s, %v", s, every, ok)
	}
}
