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

// applyChanges applies changes in tx for the entry at seq, in order. The
// first change whose condition fails (or whose document the database
// refuses) is returned as refused: its Refusal when set, else a
// *custody.Error; the caller rolls back what the changes before it wrote.
// A storage failure is err.
func applyChanges(ctx context.Context, tx pgx.Tx, seq int64, changes []custody.Change) (refused, err error) {
	for _, c := range changes {
		err := applyChange(ctx, tx, seq, c)
		if err == nil {
			continue
		}
		var ce *custody.Error
		if !errors.As(err, &ce) {
			return nil, err
		}
		if c.Refusal != nil && ce.Kind != custody.EINVALID && ce.Kind != custody.EUNAVAILABLE {
			return c.Refusal, nil
		}
		return err, nil
	}
	return nil, nil
}

func applyChange(ctx context.Context, tx pgx.Tx, seq int64, c custody.Change) error {
	switch c.Op {
	case custody.OpPutState:
		return putState(ctx, tx, c.NS, c.Key, c.Doc)
	case custody.OpIncrState:
		_, err := incr(ctx, tx, c.NS, c.Key, c.Delta, c.Limit)
		return err
	case custody.OpCreateApproval:
		return createApproval(ctx, tx, c.Approval)
	case custody.OpUpdateApproval:
		return updateApproval(ctx, tx, c.Approval, c.From)
	case custody.OpConsumeApproval:
		return consumeApproval(ctx, tx, c.ID, seq)
	}
	return custody.Errorf(custody.EINVALID, "unknown change operation %d", c.Op)
}

// execer is what a pool and a transaction offer to write.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// dataError turns the database's refusal of a value (class 22: a counter
// that is not an integer, a sum out of range) into EINVALID; other errors
// are returned as they are.
func dataError(what string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && strings.HasPrefix(pe.Code, "22") {
		return &custody.Error{Kind: custody.EINVALID, Message: what + ": " + pe.Message, Err: err}
	}
	return fmt.Errorf("%s: %w", what, err)
}
