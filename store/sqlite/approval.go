package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/custody-dev/custody"
)

// Approval returns one approval request; ENOTFOUND if absent.
func (db *DB) Approval(ctx context.Context, id string) (custody.Approval, error) {
	return getApproval(ctx, db.rdb, id)
}

// ApprovalsFor lists the requests of trace asked for the action with the
// given digest or bound to it by an operator's edit, newest first.
func (db *DB) ApprovalsFor(ctx context.Context, trace, digest string) ([]custody.Approval, error) {
	const q = `SELECT doc FROM approvals WHERE trace = ? AND digest = ?
		UNION SELECT doc FROM approvals WHERE trace = ? AND requested_digest = ?`
	as, err := db.queryApprovals(ctx, q, trace, digest, trace, digest)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(as, func(a, b custody.Approval) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	return as, nil
}

// ApprovalsOf lists the requests requester asked for the action with the
// given digest or bound to it by an operator's edit, in any trace, newest
// first.
func (db *DB) ApprovalsOf(ctx context.Context, requester, digest string) ([]custody.Approval, error) {
	const q = `SELECT doc FROM approvals WHERE requester = ? AND digest = ?
		UNION SELECT doc FROM approvals WHERE requester = ? AND requested_digest = ?`
	as, err := db.queryApprovals(ctx, q, requester, digest, requester, digest)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(as, func(a, b custody.Approval) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	return as, nil
}

// Approvals lists approval requests, newest first; status "" lists all.
func (db *DB) Approvals(ctx context.Context, status custody.ApprovalStatus) ([]custody.Approval, error) {
	q := `SELECT doc FROM approvals ORDER BY created_at DESC, id DESC`
	var args []any
	if status != "" {
		q = `SELECT doc FROM approvals WHERE status = ? ORDER BY created_at DESC, id DESC`
		args = append(args, string(status))
	}
	return db.queryApprovals(ctx, q, args...)
}

func (db *DB) queryApprovals(ctx context.Context, q string, args ...any) ([]custody.Approval, error) {
	rows, err := db.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, unavailable("list approvals", err)
	}
	defer rows.Close()
	var out []custody.Approval
	for rows.Next() {
		var doc []byte
		var a custody.Approval
		if err := rows.Scan(&doc); err != nil {
			return nil, unavailable("list approvals", err)
		}
		if err := json.Unmarshal(doc, &a); err != nil {
			return nil, unavailable("list approvals", fmt.Errorf("decode approval: %w", err))
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, unavailable("list approvals", err)
	}
	return out, nil
}

func getApproval(ctx context.Context, q querier, id string) (custody.Approval, error) {
	var a custody.Approval
	var doc []byte
	err := q.QueryRowContext(ctx, `SELECT doc FROM approvals WHERE id = ?`, id).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return a, custody.Errorf(custody.ENOTFOUND, "approval %s not found", id)
	}
	if err != nil {
		return a, unavailable("read approval", err)
	}
	if err := json.Unmarshal(doc, &a); err != nil {
		return a, unavailable("read approval", fmt.Errorf("decode approval %s: %w", id, err))
	}
	return a, nil
}
