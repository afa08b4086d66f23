package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// sqlTx is what the changes committed with an entry run their statements
// on: a *sql.Tx, or the writer's transaction with its prepared statements
// (stmtTx).
type sqlTx interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// stmtCache holds the statements the writer's changes run most, each
// prepared once on the write connection instead of parsed again by every
// commit:
// SQLite's parser was 13.6% of `serve`'s CPU on a governed call with a
// calls budget, whose commit reads and writes two counters inside a
// savepoint (`custody bench upstream --door mcp --max-calls-per-trace
// 1000000000 --cpuprofile`, 2 vCPU, 2026-12-04). Only the writer's
// goroutine uses it. The statements are prepared when the writer starts:
// the write connection is the only one, so nothing can be prepared on it
// while a transaction holds it. Any other statement runs unprepared.
type stmtCache struct {
	stmts map[string]*sql.Stmt
}

// changeQueries are the statements prepared: the savepoint around an
// entry's changes and the counters they read and write.
var changeQueries = []string{savepoint, rollbackSavepoint, releaseSavepoint, selectState, upsertState}

// prepareStmts prepares queries on conn.
func prepareStmts(ctx context.Context, conn *sql.DB, queries ...string) (*stmtCache, error) {
	c := &stmtCache{stmts: map[string]*sql.Stmt{}}
	for _, q := range queries {
		st, err := conn.PrepareContext(ctx, q)
		if err != nil {
			c.close()
			return nil, fmt.Errorf("prepare %q: %w", q, err)
		}
		c.stmts[q] = st
	}
	return c, nil
}

// in returns tx running the cache's statements prepared.
func (c *stmtCache) in(tx *sql.Tx) stmtTx { return stmtTx{tx: tx, c: c} }

// close closes every statement.
func (c *stmtCache) close() error {
	var errs []error
	for _, st := range c.stmts {
		errs = append(errs, st.Close())
	}
	clear(c.stmts)
	return errors.Join(errs...)
}

// stmtTx is a transaction of the writer that runs each statement prepared
// once (see stmtCache).
type stmtTx struct {
	tx *sql.Tx
	c  *stmtCache
}

// ExecContext runs query in the transaction, prepared if it is cached.
func (t stmtTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st, ok := t.c.stmts[query]; ok {
		return t.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, query, args...)
}

// QueryContext runs query in the transaction, prepared if it is cached.
func (t stmtTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st, ok := t.c.stmts[query]; ok {
		return t.tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, query, args...)
}

// QueryRowContext runs query in the transaction, prepared if it is cached.
func (t stmtTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st, ok := t.c.stmts[query]; ok {
		return t.tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, query, args...)
}
