package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/custody-dev/custody"
)

// applyChanges applies changes in tx for the entry at seq. The first
// change whose condition fails returns its error; the caller rolls back
// what the changes before it wrote.
func applyChanges(ctx context.Context, tx sqlTx, seq int64, changes []custody.Change) error {
	for _, c := range changes {
		err := applyChange(ctx, tx, seq, c)
		if err == nil {
			continue
		}
		return c.Refused(err)
	}
	return nil
}

func applyChange(ctx context.Context, tx sqlTx, seq int64, c custody.Change) error {
	switch c.Op {
	case custody.OpPutState:
		return putState(ctx, tx, c.NS, c.Key, c.Doc)
	case custody.OpIncrState:
		_, err := incr(ctx, tx, c.NS, c.Key, c.Delta, c.Limit)
		return err
	case custody.OpCreateApproval:
		return createApproval(ctx, tx, c.Approval)
	case custody.OpUpdateApproval:
		return transition(ctx, tx, c.Approval.ID, func(a *custody.Approval) error {
			if a.Status != c.From {
				return custody.Errorf(custody.ECONFLICT, "approval %s is %s, not %s", a.ID, a.Status, c.From)
			}
			*a = c.Approval
			return nil
		})
	case custody.OpConsumeApproval:
		return transition(ctx, tx, c.ID, func(a *custody.Approval) error {
			if a.Status != custody.ApprovalApproved || a.ConsumedSeq != 0 {
				return custody.Errorf(custody.ECONFLICT, "approval %s is %s: only an approved, unused approval can be used", a.ID, a.Status)
			}
			a.Status, a.ConsumedSeq = custody.ApprovalConsumed, seq
			return nil
		})
	}
	return custody.Errorf(custody.EINVALID, "unknown change operation %d", c.Op)
}

// incr adds delta to the counter under ns and key and returns the sum;
// with limit > 0 a sum above limit is EDENIED and nothing is written.
func incr(ctx context.Context, tx sqlTx, ns, key string, delta, limit int64) (int64, error) {
	old, err := counter(ctx, tx, ns, key)
	if err != nil {
		return 0, err
	}
	if (delta > 0 && old > math.MaxInt64-delta) || (delta < 0 && old < math.MinInt64-delta) {
		return 0, custody.Errorf(custody.EINVALID, "state %s/%s: %d%+d overflows", ns, key, old, delta)
	}
	n := old + delta
	if limit > 0 && n > limit {
		return 0, custody.Errorf(custody.EDENIED, "state %s/%s: %d would pass the limit %d", ns, key, n, limit)
	}
	if delta == 0 {
		return n, nil // a check: nothing to write
	}
	return n, putState(ctx, tx, ns, key, strconv.AppendInt(nil, n, 10))
}

// createApproval inserts a new request; ECONFLICT if its id exists.
func createApproval(ctx context.Context, tx sqlTx, a custody.Approval) error {
	if _, err := getApproval(ctx, tx, a.ID); custody.ErrorKind(err) != custody.ENOTFOUND {
		if err == nil {
			return custody.Errorf(custody.ECONFLICT, "approval %s already exists", a.ID)
		}
		return err
	}
	doc, err := json.Marshal(a)
	if err != nil {
		return custody.Errorf(custody.EINVALID, "approval %s: %v", a.ID, err)
	}
	const q = `INSERT INTO approvals (status, created_at, doc, trace, digest, requested_digest, requester, id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	if _, err := tx.ExecContext(ctx, q, string(a.Status), custody.FormatTime(a.CreatedAt), doc, a.Trace, a.Digest, a.Digest, a.Requester, a.ID); err != nil {
		return unavailable("write approval", fmt.Errorf("approval %s: %w", a.ID, err))
	}
	return nil
}

// transition applies fn to the stored request id and saves it; fn's error
// is returned as is. ENOTFOUND if absent, EINVALID if fn changes the id.
func transition(ctx context.Context, tx sqlTx, id string, fn func(*custody.Approval) error) error {
	_, err := updateApproval(ctx, tx, id, fn)
	return err
}

func updateApproval(ctx context.Context, tx sqlTx, id string, fn func(*custody.Approval) error) (custody.Approval, error) {
	a, err := getApproval(ctx, tx, id)
	if err != nil {
		return a, err
	}
	if err := fn(&a); err != nil {
		return a, err
	}
	if a.ID != id {
		return a, custody.Errorf(custody.EINVALID, "approval %s: the id cannot change", id)
	}
	doc, err := json.Marshal(a)
	if err != nil {
		return a, custody.Errorf(custody.EINVALID, "approval %s: %v", id, err)
	}
	const q = `UPDATE approvals SET status = ?, created_at = ?, doc = ?, trace = ?, digest = ? WHERE id = ?`
	if _, err := tx.ExecContext(ctx, q, string(a.Status), custody.FormatTime(a.CreatedAt), doc, a.Trace, a.Digest, id); err != nil {
		return a, unavailable("write approval", fmt.Errorf("approval %s: %w", id, err))
	}
	return a, nil
}
