package storetest

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/ratewindow"
)

// RatePruner is a store that prunes stale rate-limit windows.
type RatePruner interface {
	custody.StateStore
	// PruneRates deletes the windows that ended a window before now and
	// returns how many.
	PruneRates(ctx context.Context, now time.Time) (int64, error)
}

// PruneNow is the time the rate pruning cases prune at.
var PruneNow = time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC)

// rateRows are rate-window keys, each with whether pruning at PruneNow
// keeps it.
func rateRows() map[string]bool {
	h := time.Hour
	w := func(per string, every time.Duration, back int) string {
		return ratewindow.Key(per, "a", "t", every, PruneNow.Truncate(every).Add(-time.Duration(back)*every))
	}
	return map[string]bool{
		w("agent", h, 0):           true,  // the current window
		w("agent", h, 1):           true,  // ended less than a window ago
		w("agent", h, 2):           false, // ended a window ago
		w("tool", time.Minute, 30): false,
		w("trace", 24*h, 1):        true, // yesterday's day window
		"not a window":             true,
	}
}

// SeedRates counts one call in every window of the pruning cases, and
// one under the stalest key in another namespace; it returns how many
// rate windows it wrote.
func SeedRates(t *testing.T, st custody.StateStore) int {
	t.Helper()
	rows := rateRows()
	for key := range rows {
		if _, err := st.IncrState(context.Background(), ratewindow.NS, key, 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.IncrState(context.Background(), "other", ratewindow.Key("agent", "a", "t", time.Minute, time.Unix(0, 0)), 1); err != nil {
		t.Fatal(err)
	}
	return len(rows)
}

// RateKeys lists the keys of namespace ns, sorted.
func RateKeys(t *testing.T, st custody.StateStore, ns string) []string {
	t.Helper()
	docs, err := st.States(context.Background(), ns)
	if err != nil {
		t.Fatal(err)
	}
	return slices.Sorted(maps.Keys(docs))
}

// KeptRates is the rate keys that pruning at PruneNow keeps, sorted.
func KeptRates() []string {
	var out []string
	for k, keep := range rateRows() {
		if keep {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// RunPruneRates checks that pruning deletes the rate windows that ended
// a window ago and nothing else: not a current or recent window, not a
// key of another layout, not another namespace's row.
func RunPruneRates(t *testing.T, db RatePruner) {
	t.Helper()
	SeedRates(t, db)
	n, err := db.PruneRates(context.Background(), PruneNow)
	if err != nil || n != 2 {
		t.Fatalf("PruneRates = %d, %v; want 2", n, err)
	}
	if got := RateKeys(t, db, ratewindow.NS); !slices.Equal(got, KeptRates()) {
		t.Errorf("left %q, want %q", got, KeptRates())
	}
	if got := RateKeys(t, db, "other"); len(got) != 1 {
		t.Errorf("another namespace left %q, want its one row", got)
	}
	if n, err := db.PruneRates(context.Background(), PruneNow); err != nil || n != 0 {
		t.Errorf("second PruneRates = %d, %v; want 0", n, err)
	}
}
