package sqlite

import (
	"context"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) custody.Store {
		db, err := Open(context.Background(), t.TempDir(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return db
	})
}
