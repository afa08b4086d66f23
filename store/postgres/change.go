package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/custody-dev/custody"
)

// statement is one change as one SQL statement that returns one row (or
// none), and how to read it: nil when the change is made, a
// *custody.Error when its condition fails or the database refuses its
// value, another error when the storage fails. The writer pipelines the
// statements of an entry's changes in one round trip.
type statement struct {
	sql  string
	args []any
	read func(pgx.Row) error
}

// run runs s on its own.
func (s statement) run(ctx context.Context, q querier) error {
	return s.read(q.QueryRow(ctx, s.sql, s.args...))
}

// changeStatement returns the statement making c for the entry at seq.
func changeStatement(seq int64, c custody.Change) (statement, error) {
	switch c.Op {
	case custody.OpPutState:
		return putState(c.NS, c.Key, c.Doc), nil
	case custody.OpIncrState:
		var n int64
		return incr(c.NS, c.Key, c.Delta, c.Limit, &n), nil
	case custody.OpCreateApproval:
		return createApproval(c.Approval)
	case custody.OpUpdateApproval:
		return updateApproval(c.Approval, c.From)
	case custody.OpConsumeApproval:
		return consumeApproval(c.ID, seq), nil
	}
	return statement{}, custody.Errorf(custody.EINVALID, "unknown change operation %d", c.Op)
}

// dataError turns the database's refusal of a value (class 22: a counter
// that is not an integer, a sum out of range) into EINVALID; other errors
// are returned as they are.
func dataError(what string, err error) error {
	if err == nil {
		return nil
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && strings.HasPrefix(pe.Code, "22") {
		return &custody.Error{Kind: custody.EINVALID, Message: what + ": " + pe.Message, Err: err}
	}
	return fmt.Errorf("%s: %w", what, err)
}
