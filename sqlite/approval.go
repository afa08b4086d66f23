package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/custody-dev/custody"
)

// CreateApproval stores a new approval request; ECONFLICT if one with the
// same id exists, EINVALID without an id or status.
func (db *DB) CreateApproval(ctx context.Context, a custody.Approval) error {
	if a.ID == "" || a.Status == "" {
		return custody.Errorf(custody.EINVALID, "approval: id and status are required")
	}
	doc, err := json.Marshal(a)
	if err != nil {
		return custody.Errorf(custody.EINVALID, "approval %s: %v", a.ID, err)
	}
	_, err = db.do(ctx, &request{what: "create approval", op: func(ctx context.Context, tx *sql.Tx) error {
		if _, err := getApproval(ctx, tx, a.ID); custody.ErrorKind(err) != custody.ENOTFOUND {
			if err == nil {
				return custody.Errorf(custody.ECONFLICT, "approval %s already exists", a.ID)
			}
			return err
		}
		return putApproval(ctx, tx, `INSERT INTO approvals (status, created_at, doc, id) VALUES (?, ?, ?, ?)`, a, doc)
	}})
	return err
}

// Approval returns one approval request; ENOTFOUND if absent.
func (db *DB) Approval(ctx context.Context, id string) (custody.Approval, error) {
	return getApproval(ctx, db.rdb, id)
}

// Approvals lists approval requests, newest first; status "" lists all.
func (db *DB) Approvals(ctx context.Context, status custody.ApprovalStatus) ([]custody.Approval, error) {
	q := `SELECT doc FROM approvals ORDER BY created_at DESC, id DESC`
	var args []any
	if status != "" {
		q = `SELECT doc FROM approvals WHERE status = ? ORDER BY created_at DESC, id DESC`
		args = append(args, string(status))
	}
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

// UpdateApproval applies fn to the stored request atomically: fn runs inside
// the store's write transaction, sees the current value, and its changes are
// saved only if it returns nil; its error is returned as is. ENOTFOUND if
// the request is absent, EINVALID if fn changes the id.
//
// Writes are serialised, so fn must be quick and must not call the store.
func (db *DB) UpdateApproval(ctx context.Context, id string, fn func(*custody.Approval) error) (custody.Approval, error) {
	var out custody.Approval
	_, err := db.do(ctx, &request{what: "update approval", op: func(ctx context.Context, tx *sql.Tx) error {
		a, err := getApproval(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := fn(&a); err != nil {
			return err
		}
		if a.ID != id {
			return custody.Errorf(custody.EINVALID, "approval %s: the id cannot change", id)
		}
		doc, err := json.Marshal(a)
		if err != nil {
			return custody.Errorf(custody.EINVALID, "approval %s: %v", id, err)
		}
		out = a
		return putApproval(ctx, tx, `UPDATE approvals SET status = ?, created_at = ?, doc = ? WHERE id = ?`, a, doc)
	}})
	if err != nil {
		return custody.Approval{}, err
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

// putApproval runs an INSERT or UPDATE whose parameters are status,
// created_at, doc and id.
func putApproval(ctx context.Context, tx *sql.Tx, q string, a custody.Approval, doc []byte) error {
	if _, err := tx.ExecContext(ctx, q, string(a.Status), custody.FormatTime(a.CreatedAt), doc, a.ID); err != nil {
		return unavailable("write approval", fmt.Errorf("approval %s: %w", a.ID, err))
	}
	return nil
}
