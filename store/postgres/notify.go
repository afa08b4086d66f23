package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/custody-dev/custody"
)

// Every group that changes approvals notifies their ids on the ledger's
// channel (pg_notify in the group's transaction, so delivered when it
// commits), so that each instance can show a decision taken on another at
// once (ApprovalChanges).

// approvalChannel names the notification channel of the ledger in schema:
// a digest of a schema name too long for a channel's 63 bytes.
func approvalChannel(schema string) string {
	name := "custody_approvals." + schema
	if len(name) > 63 {
		sum := sha256.Sum256([]byte(schema))
		name = "custody_approvals." + hex.EncodeToString(sum[:20])
	}
	return name
}

// approvalIDs returns the ids of the approvals changes touch.
func approvalIDs(changes []custody.Change) []string {
	var ids []string
	for _, c := range changes {
		switch c.Op {
		case custody.OpCreateApproval, custody.OpUpdateApproval:
			ids = append(ids, c.Approval.ID)
		case custody.OpConsumeApproval:
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// queueNotify queues the notification of the approvals the group changed.
func (db *DB) queueNotify(q *pgx.Batch, ids map[string]bool) {
	for id := range ids {
		q.Queue(`SELECT pg_notify($1, $2)`, db.channel, id)
	}
}

// ApprovalChanges listens, on a connection of its own, for the approvals
// that any instance on this store changes, and sends their ids on the
// returned channel as their changes commit, until ctx ends or the
// connection fails; the channel is then closed (listen again to go on). A
// receiver that falls behind misses ids rather than holding the
// connection: it re-reads the queue when it catches up.
func (db *DB) ApprovalChanges(ctx context.Context) (<-chan string, error) {
	pc, err := db.pool.Acquire(ctx)
	if err != nil {
		return nil, unavailable("listen for approvals", err)
	}
	conn := pc.Hijack()
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{db.channel}.Sanitize()); err != nil {
		conn.Close(context.Background())
		return nil, unavailable("listen for approvals", fmt.Errorf("listen: %w", err))
	}
	ids := make(chan string, 256)
	go func() {
		defer close(ids)
		defer conn.Close(context.Background())
		for {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				return
			}
			select {
			case ids <- n.Payload:
			default: // the receiver re-reads the queue
			}
		}
	}()
	return ids, nil
}
