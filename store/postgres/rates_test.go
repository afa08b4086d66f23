package postgres

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/ratewindow"
	"github.com/custody-dev/custody/store/postgres/pgtest"
	"github.com/custody-dev/custody/store/storetest"
)

// TestPruneRates: pruning deletes the rate windows that ended a window
// ago and nothing else: not a current or recent window, not a key of
// another layout, not another namespace's row.
func TestPruneRates(t *testing.T) {
	storetest.RunPruneRates(t, open(t, pgtest.URL(t), Options{}))
}

// TestPruneRatesOnItsOwn: an instance that appends prunes the stale
// windows on its writer's tick, with no one asking.
func TestPruneRatesOnItsOwn(t *testing.T) {
	db := open(t, pgtest.URL(t), Options{CheckpointInterval: 2 * time.Millisecond, Now: func() time.Time { return storetest.PruneNow }})
	storetest.SeedRates(t, db)
	appendN(t, db, 1, "t1")
	deadline := time.Now().Add(time.Minute) // a hang guard only
	for !slices.Equal(storetest.RateKeys(t, db, ratewindow.NS), storetest.KeptRates()) {
		if time.Now().After(deadline) {
			t.Fatalf("stale windows still there: %q", storetest.RateKeys(t, db, ratewindow.NS))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPruneRatesReadOnly: a store opened read-only refuses to prune.
func TestPruneRatesReadOnly(t *testing.T) {
	url := pgtest.URL(t)
	db := open(t, url, Options{})
	n := storetest.SeedRates(t, db)
	ro := open(t, url, Options{ReadOnly: true})
	if _, err := ro.PruneRates(context.Background(), storetest.PruneNow); custody.ErrorKind(err) != custody.EUNAVAILABLE {
		t.Fatalf("PruneRates read-only: %v, want EUNAVAILABLE", err)
	}
	if got := storetest.RateKeys(t, db, ratewindow.NS); len(got) != n {
		t.Errorf("a read-only store pruned: %q left", got)
	}
}
