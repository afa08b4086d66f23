package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/custody-dev/custody"
)

// checkChanges refuses, in the caller's goroutine, the changes that are
// malformed whatever the store holds, and copies their documents so that
// the caller may reuse its buffers.
func checkChanges(changes []custody.Change) ([]custody.Change, error) {
	if len(changes) == 0 {
		return nil, nil
	}
	out := make([]custody.Change, len(changes))
	for i, c := range changes {
		if err := checkChange(c); err != nil {
			return nil, custody.Errorf(custody.EINVALID, "change %d: %s", i, err)
		}
		c.Doc = bytes.Clone(c.Doc)
		out[i] = c
	}
	return out, nil
}

func checkChange(c custody.Change) error {
	switch c.Op {
	case custody.OpPutState, custody.OpIncrState:
		switch {
		case c.NS == "" || c.Key == "":
			return errors.New("state needs a namespace and a key")
		case c.Op == custody.OpPutState && !json.Valid(c.Doc):
			return fmt.Errorf("state %s/%s: the document is not valid JSON", c.NS, c.Key)
		case c.Limit < 0:
			return fmt.Errorf("state %s/%s: limit %d is negative", c.NS, c.Key, c.Limit)
		}
	case custody.OpCreateApproval, custody.OpUpdateApproval:
		if c.Approval.ID == "" || c.Approval.Status == "" {
			return errors.New("approval: id and status are required")
		}
		if c.Op == custody.OpUpdateApproval && c.From == "" {
			return fmt.Errorf("approval %s: the status it must have is missing", c.Approval.ID)
		}
	case custody.OpConsumeApproval:
		if c.ID == "" {
			return errors.New("approval: id is required")
		}
	default:
		return fmt.Errorf("unknown operation %d", c.Op)
	}
	return nil
}

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

// refusal returns what Commit answers when c fails with err, a
// *custody.Error: c's Refusal when set, unless err is EINVALID or
// EUNAVAILABLE.
func refusal(c custody.Change, err *custody.Error) error {
	if c.Refusal != nil && err.Kind != custody.EINVALID && err.Kind != custody.EUNAVAILABLE {
		return c.Refusal
	}
	return err
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
