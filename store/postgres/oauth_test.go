package postgres

import (
	"testing"

	"github.com/custody-dev/custody/store/postgres/pgtest"
	"github.com/custody-dev/custody/store/storetest"
	"github.com/custody-dev/custody/upstream"
)

var _ upstream.TokenStore = (*DB)(nil)

func TestTokenConformance(t *testing.T) {
	pgtest.Require(t)
	storetest.RunTokens(t, func(t *testing.T) upstream.TokenStore { return open(t, pgtest.URL(t), Options{}) })
}
