package brain

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/custody-dev/custody"
)

// Proposals returns the nodes waiting for a user's review, by id.
func (r *Room) Proposals(ctx context.Context) ([]Node, error) {
	return r.Nodes(ctx, statusProposed)
}

// Confirm marks a proposed node confirmed by user. It returns EINVALID
// without a user (or with "brain" as the user), ENOTFOUND for an unknown
// node and ECONFLICT for a node that is not proposed.
func (r *Room) Confirm(ctx context.Context, id, user string) (Node, error) {
	return r.review(ctx, id, user, statusConfirmed, eventProposalConfirmed)
}

// Reject marks a proposed node rejected by user; errors as Confirm.
func (r *Room) Reject(ctx context.Context, id, user string) (Node, error) {
	return r.review(ctx, id, user, statusRejected, eventProposalRejected)
}

func (r *Room) review(ctx context.Context, id, user, status, eventType string) (Node, error) {
	if user == "" || user == createdByBrain {
		return Node{}, custody.Errorf(custody.EINVALID, "a review needs a named user (--user), and the Brain is not one")
	}
	err := r.inTx(ctx, func(tx *sql.Tx) error {
		var cur string
		err := tx.QueryRowContext(ctx, `SELECT review_status FROM nodes WHERE id = ?`, id).Scan(&cur)
		if errors.Is(err, sql.ErrNoRows) {
			return custody.Errorf(custody.ENOTFOUND, "no node %q in the room", id)
		}
		if err != nil {
			return fmt.Errorf("read node %s: %w", id, err)
		}
		if cur != statusProposed {
			return custody.Errorf(custody.ECONFLICT, "node %s is %s, not proposed", id, cur)
		}
		_, err = tx.ExecContext(ctx, `UPDATE nodes SET review_status = ?, confirmed_by = ?, updated_at = ? WHERE id = ?`,
			status, user, r.now().UnixMilli(), id)
		if err != nil {
			return fmt.Errorf("review node %s: %w", id, err)
		}
		ev, err := r.event(eventType, id, map[string]string{"user": user})
		if err != nil {
			return err
		}
		return insertEvent(ctx, tx, ev)
	})
	if err != nil {
		return Node{}, err
	}
	return r.Node(ctx, id)
}
