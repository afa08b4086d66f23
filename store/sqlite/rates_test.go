package sqlite

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/ratewindow"
)

// pruneNow is the time the rate pruning tests prune at.
var pruneNow = time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC)

// rateRows are rate-window keys, each with whether pruning at pruneNow
// keeps it.
func rateRows() map[string]bool {
	h := time.Hour
	w := func(per string, every time.Duration, back int) string {
		return ratewindow.Key(per, "a", "t", every, pruneNow.Truncate(every).Add(-time.Duration(back)*every))
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

// seedRates counts one call in every window of rateRows, and one under
// the stalest key in another namespace.
func seedRates(t *testing.T, st custody.StateStore) {
	t.Helper()
	for key := range rateRows() {
		if _, err := st.IncrState(context.Background(), ratewindow.NS, key, 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.IncrState(context.Background(), "other", ratewindow.Key("agent", "a", "t", time.Minute, time.Unix(0, 0)), 1); err != nil {
		t.Fatal(err)
	}
}

// rateKeys lists the keys of the rate namespace, sorted.
func rateKeys(t *testing.T, st custody.StateStore, ns string) []string {
	t.Helper()
	docs, err := st.States(context.Background(), ns)
	if err != nil {
		t.Fatal(err)
	}
	return slices.Sorted(maps.Keys(docs))
}

// kept is the keys pruning keeps, sorted.
func kept() []string {
	var out []string
	for k, keep := range rateRows() {
		if keep {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// TestPruneRates: pruning deletes the rate windows that ended a window
// ago and nothing else: not a current or recent window, not a key of
// another layout, not another namespace's row.
func TestPruneRates(t *testing.T) {
	db := openTest(t, Options{})
	seedRates(t, db)
	n, err := db.PruneRates(context.Background(), pruneNow)
	if err != nil || n != 2 {
		t.Fatalf("PruneRates = %d, %v; want 2", n, err)
	}
	if got := rateKeys(t, db, ratewindow.NS); !slices.Equal(got, kept()) {
		t.Errorf("left %q, want %q", got, kept())
	}
	if got := rateKeys(t, db, "other"); len(got) != 1 {
		t.Errorf("another namespace left %q, want its one row", got)
	}
	if n, err := db.PruneRates(context.Background(), pruneNow); err != nil || n != 0 {
		t.Errorf("second PruneRates = %d, %v; want 0", n, err)
	}
}

// TestPruneRatesOnItsOwn: a store this process appends to prunes the
// stale windows on its writer's tick, with no one asking.
func TestPruneRatesOnItsOwn(t *testing.T) {
	db := openTest(t, Options{CheckpointInterval: 2 * time.Millisecond, Now: func() time.Time { return pruneNow }})
	seedRates(t, db)
	mustAppend(t, db, entry("test.kind", "t1", nil, 0))
	deadline := time.Now().Add(time.Minute) // a hang guard only
	for !slices.Equal(rateKeys(t, db, ratewindow.NS), kept()) {
		if time.Now().After(deadline) {
			t.Fatalf("stale windows still there: %q", rateKeys(t, db, ratewindow.NS))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPruneRatesReadOnly: a store opened read-only refuses to prune.
func TestPruneRatesReadOnly(t *testing.T) {
	dir := t.TempDir()
	db := openDir(t, dir, Options{})
	seedRates(t, db)
	db.Close()
	ro := openDir(t, dir, Options{ReadOnly: true})
	if _, err := ro.PruneRates(context.Background(), pruneNow); custody.ErrorKind(err) != custody.EUNAVAILABLE {
		t.Fatalf("PruneRates read-only: %v, want EUNAVAILABLE", err)
	}
}
