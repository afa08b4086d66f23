package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/custody-dev/custody"
)

// Approval returns one approval request; ENOTFOUND if absent.
func (db *DB) Approval(ctx context.Context, id string) (custody.Approval, error) {
	as, err := db.queryApprovals(ctx, `SELECT `+approvalColumns+` FROM approvals WHERE id = $1`, id)
	if err != nil {
		return custody.Approval{}, err
	}
	if len(as) == 0 {
		return custody.Approval{}, custody.Errorf(custody.ENOTFOUND, "approval %s not found", id)
	}
	return as[0], nil
}

// Approvals lists approval requests, newest first; status "" lists all.
func (db *DB) Approvals(ctx context.Context, status custody.ApprovalStatus) ([]custody.Approval, error) {
	if status == "" {
		return db.queryApprovals(ctx, `SELECT `+approvalColumns+` FROM approvals ORDER BY created_at DESC, id DESC`)
	}
	return db.queryApprovals(ctx, `SELECT `+approvalColumns+` FROM approvals WHERE status = $1 ORDER BY created_at DESC, id DESC`, string(status))
}

// ApprovalsFor lists the requests of trace asked for the action with the
// given digest or bound to it by an operator's edit, newest first.
func (db *DB) ApprovalsFor(ctx context.Context, trace, digest string) ([]custody.Approval, error) {
	const q = `SELECT ` + approvalColumns + ` FROM approvals WHERE trace = $1 AND (digest = $2 OR requested_digest = $2)
		ORDER BY created_at DESC, id DESC`
	return db.queryApprovals(ctx, q, trace, digest)
}

// ApprovalsOf lists the requests requester asked for the action with the
// given digest or bound to it by an operator's edit, in any trace, newest
// first.
func (db *DB) ApprovalsOf(ctx context.Context, requester, digest string) ([]custody.Approval, error) {
	const q = `SELECT ` + approvalColumns + ` FROM approvals WHERE requester = $1 AND (digest = $2 OR requested_digest = $2)
		ORDER BY created_at DESC, id DESC`
	return db.queryApprovals(ctx, q, requester, digest)
}

const approvalColumns = `doc, status, consumed_seq`

func (db *DB) queryApprovals(ctx context.Context, q string, args ...any) ([]custody.Approval, error) {
	rows, err := db.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, unavailable("read approvals", err)
	}
	as, err := pgx.CollectRows(rows, scanApproval)
	if err != nil {
		return nil, unavailable("read approvals", err)
	}
	return as, nil
}

// scanApproval reads the document and lays the status and use kept beside
// it over it: a use updates only those.
func scanApproval(row pgx.CollectableRow) (custody.Approval, error) {
	var a custody.Approval
	var doc []byte
	var status string
	var consumed int64
	if err := row.Scan(&doc, &status, &consumed); err != nil {
		return a, err
	}
	if err := json.Unmarshal(doc, &a); err != nil {
		return a, fmt.Errorf("decode approval: %w", err)
	}
	a.Status, a.ConsumedSeq = custody.ApprovalStatus(status), consumed
	return a, nil
}

// createApproval is the statement inserting a new request; ECONFLICT if
// its id exists. Its digest is also kept as the digest it was requested
// for, never changed.
func createApproval(a custody.Approval) (statement, error) {
	doc, err := json.Marshal(a)
	if err != nil {
		return statement{}, custody.Errorf(custody.EINVALID, "approval %s: %v", a.ID, err)
	}
	const q = `INSERT INTO approvals (id, status, consumed_seq, created_at, trace, digest, requested_digest, doc, requester)
		VALUES ($1, $2, $3, $4, $5, $6, $6, $7, $8) ON CONFLICT (id) DO NOTHING RETURNING 1`
	return statement{sql: q, args: []any{a.ID, string(a.Status), a.ConsumedSeq, a.CreatedAt, a.Trace, a.Digest, doc, a.Requester},
		read: func(row pgx.Row) error {
			var one int
			err := row.Scan(&one)
			if errors.Is(err, pgx.ErrNoRows) {
				return custody.Errorf(custody.ECONFLICT, "approval %s already exists", a.ID)
			}
			return dataError("write approval "+a.ID, err)
		}}, nil
}

// conditional is a conditional update of the approval $1 that also says
// why it changed nothing: the row's status (NULL when there is no such
// request) and whether it was updated, in one statement.
func conditional(update string) string {
	return `WITH cur AS (SELECT status FROM approvals WHERE id = $1),
		upd AS (` + update + ` RETURNING 1)
		SELECT (SELECT status FROM cur), EXISTS (SELECT 1 FROM upd)`
}

// readConditional reads the row of a conditional statement: ENOTFOUND
// when there is no request id, conflict(its status) when it was not
// updated.
func readConditional(id string, conflict func(status string) error) func(pgx.Row) error {
	return func(row pgx.Row) error {
		var status *string
		var updated bool
		if err := row.Scan(&status, &updated); err != nil {
			return dataError("write approval "+id, err)
		}
		switch {
		case status == nil:
			return custody.Errorf(custody.ENOTFOUND, "approval %s not found", id)
		case !updated:
			return conflict(*status)
		}
		return nil
	}
}

// updateApproval is the statement replacing the request a.ID with a if
// its status is from: one conditional update.
func updateApproval(a custody.Approval, from custody.ApprovalStatus) (statement, error) {
	doc, err := json.Marshal(a)
	if err != nil {
		return statement{}, custody.Errorf(custody.EINVALID, "approval %s: %v", a.ID, err)
	}
	q := conditional(`UPDATE approvals SET status = $2, consumed_seq = $3, created_at = $4, trace = $5, digest = $6, doc = $7
		WHERE id = $1 AND status = $8`)
	return statement{sql: q, args: []any{a.ID, string(a.Status), a.ConsumedSeq, a.CreatedAt, a.Trace, a.Digest, doc, string(from)},
		read: readConditional(a.ID, func(status string) error {
			return custody.Errorf(custody.ECONFLICT, "approval %s is %s, not %s", a.ID, status, from)
		})}, nil
}

// consumeApproval is the statement marking the approved, unused request
// id consumed by the entry at seq: one conditional update, so that of
// several instances racing to use it exactly one succeeds.
func consumeApproval(id string, seq int64) statement {
	q := conditional(`UPDATE approvals SET status = 'consumed', consumed_seq = $2
		WHERE id = $1 AND status = 'approved' AND consumed_seq = 0`)
	return statement{sql: q, args: []any{id, seq},
		read: readConditional(id, func(status string) error {
			return custody.Errorf(custody.ECONFLICT, "approval %s is %s: only an approved, unused approval can be used", id, status)
		})}
}
