package brain

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/custody-dev/custody"
)

// execer is a *sql.DB or *sql.Tx.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// newEventID returns a fresh memory event id.
func newEventID() string {
	var b [8]byte
	rand.Read(b[:])
	return "mev_" + hex.EncodeToString(b[:])
}

// checkEvent validates an event's vocabulary fields.
func checkEvent(e MemoryEvent) error {
	if !idPattern.MatchString(e.ID) {
		return custody.Errorf(custody.EINVALID, "memory event id %q: use letters, digits, _ . : -", e.ID)
	}
	if !eventPattern.MatchString(e.EventType) {
		return custody.Errorf(custody.EINVALID, "memory event %s: event_type %q: use lower_snake_case", e.ID, e.EventType)
	}
	if e.TargetNodeID != "" && !idPattern.MatchString(e.TargetNodeID) {
		return custody.Errorf(custody.EINVALID, "memory event %s: target_node_id is not an id", e.ID)
	}
	return checkObject("memory event "+e.ID+" payload", e.Payload)
}

// insertEvent writes one event; an event whose id exists is left alone.
func insertEvent(ctx context.Context, x execer, e MemoryEvent) error {
	if err := checkEvent(e); err != nil {
		return err
	}
	var target any
	if e.TargetNodeID != "" {
		target = e.TargetNodeID
	}
	_, err := x.ExecContext(ctx, `INSERT INTO memory_events (id, event_type, target_node_id, payload, created_at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		e.ID, e.EventType, target, string(objectOrEmpty(e.Payload)), e.CreatedAt.UnixMilli())
	if err != nil {
		return fmt.Errorf("write memory event %s: %w", e.EventType, err)
	}
	return nil
}

// Record appends a memory event of the given type about node target ("" for
// the room) with payload, stamped now.
func (r *Room) Record(ctx context.Context, eventType, target string, payload any) (MemoryEvent, error) {
	e, err := r.event(eventType, target, payload)
	if err != nil {
		return MemoryEvent{}, err
	}
	return e, insertEvent(ctx, r.db, e)
}

// event builds a memory event stamped now.
func (r *Room) event(eventType, target string, payload any) (MemoryEvent, error) {
	doc, err := json.Marshal(payload)
	if err != nil {
		return MemoryEvent{}, fmt.Errorf("encode %s payload: %w", eventType, err)
	}
	return MemoryEvent{ID: newEventID(), EventType: eventType, TargetNodeID: target,
		Payload: doc, CreatedAt: r.now().UTC().Truncate(time.Millisecond)}, nil
}

// Events returns the memory events created at or after since, newest first,
// at most limit (0 for all).
func (r *Room) Events(ctx context.Context, since time.Time, limit int) ([]MemoryEvent, error) {
	if limit <= 0 {
		limit = -1
	}
	return r.queryEvents(ctx, `SELECT id, event_type, coalesce(target_node_id, ''), payload, created_at
		FROM memory_events WHERE created_at >= ? ORDER BY created_at DESC, seq DESC LIMIT ?`,
		since.UnixMilli(), limit)
}

func (r *Room) queryEvents(ctx context.Context, query string, args ...any) ([]MemoryEvent, error) {
	rows, err := r.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list memory events: %w", err)
	}
	defer rows.Close()
	var out []MemoryEvent
	for rows.Next() {
		var e MemoryEvent
		var payload string
		var at int64
		if err := rows.Scan(&e.ID, &e.EventType, &e.TargetNodeID, &payload, &at); err != nil {
			return nil, fmt.Errorf("list memory events: %w", err)
		}
		e.Payload, e.CreatedAt = json.RawMessage(payload), time.UnixMilli(at).UTC()
		out = append(out, e)
	}
	return out, rows.Err()
}
