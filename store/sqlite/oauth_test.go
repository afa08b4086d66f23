package sqlite

import (
	"context"
	"testing"

	"github.com/custody-dev/custody/store/storetest"
	"github.com/custody-dev/custody/upstream"
)

var _ upstream.TokenStore = (*DB)(nil)

// undoUpstreamTokens takes back schema version 7 (the upstreams' sealed
// tokens), for a test that makes a store of an earlier version.
const undoUpstreamTokens = `DROP TABLE upstream_tokens`

func TestTokenConformance(t *testing.T) {
	storetest.RunTokens(t, func(t *testing.T) upstream.TokenStore { return openDir(t, t.TempDir(), Options{}) })
}

// TestTokenOutlivesRestart: a token kept is there when the data
// directory is opened again, and nowhere in the ledger.
func TestTokenOutlivesRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.PutUpstreamToken(ctx, "docs", []byte("sealed-1")); err != nil {
		t.Fatal(err)
	}
	head, err := db.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	db = openDir(t, dir, Options{})
	if got, err := db.UpstreamToken(ctx, "docs"); err != nil || string(got) != "sealed-1" {
		t.Fatalf("after a restart: %q, %v", got, err)
	}
	if after, err := db.Head(ctx); err != nil || after.Seq != head.Seq {
		t.Fatalf("keeping a token appended to the ledger: seq %d, then %d (%v)", head.Seq, after.Seq, err)
	}
}
