package brain

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/custody-dev/custody"
)

// RoomFile is the JSON form a room is imported from (see the package
// documentation).
type RoomFile struct {
	Room         *Config       `json:"room,omitempty"`
	Nodes        []Node        `json:"nodes"`
	Edges        []Edge        `json:"edges"`
	MemoryEvents []MemoryEvent `json:"memory_events,omitempty"`
}

// ImportReport counts what Import wrote.
type ImportReport struct {
	Nodes        int `json:"nodes"`
	Edges        int `json:"edges"`
	MemoryEvents int `json:"memory_events"`
}

// DecodeRoomFile reads a room file strictly: unknown fields and trailing
// data are refused with EINVALID.
func DecodeRoomFile(rd io.Reader) (RoomFile, error) {
	dec := json.NewDecoder(rd)
	dec.DisallowUnknownFields()
	var f RoomFile
	if err := dec.Decode(&f); err != nil {
		return RoomFile{}, &custody.Error{Kind: custody.EINVALID, Message: "room file: " + err.Error(), Err: err}
	}
	if dec.More() {
		return RoomFile{}, custody.Errorf(custody.EINVALID, "room file: data after the JSON document")
	}
	return f, nil
}

// Import loads f into the room in one transaction: nodes and edges are
// inserted or replaced by key, memory events are added unless their id
// exists, and the config, when given, replaces the room's. A problem with
// any item refuses the whole file with EINVALID naming the item.
func (r *Room) Import(ctx context.Context, f RoomFile) (ImportReport, error) {
	now := r.now().UTC().Truncate(time.Millisecond)
	if err := f.check(now); err != nil {
		return ImportReport{}, err
	}
	rep := ImportReport{Nodes: len(f.Nodes), Edges: len(f.Edges), MemoryEvents: len(f.MemoryEvents)}
	err := r.inTx(ctx, func(tx *sql.Tx) error {
		if err := importItems(ctx, tx, f); err != nil {
			return err
		}
		ev, err := r.event(eventRoomImported, "", rep)
		if err != nil {
			return err
		}
		return insertEvent(ctx, tx, ev)
	})
	if err != nil {
		return ImportReport{}, err
	}
	return rep, nil
}

// check validates and completes every item of f in place.
func (f *RoomFile) check(now time.Time) error {
	if f.Room != nil {
		if err := f.Room.check(); err != nil {
			return err
		}
	}
	for i := range f.Nodes {
		if err := completeNode(&f.Nodes[i], now); err != nil {
			return fmt.Errorf("nodes[%d]: %w", i, err)
		}
	}
	for i := range f.Edges {
		if err := checkEdge(&f.Edges[i]); err != nil {
			return fmt.Errorf("edges[%d]: %w", i, err)
		}
	}
	for i := range f.MemoryEvents {
		e := &f.MemoryEvents[i]
		if e.CreatedAt.IsZero() {
			e.CreatedAt = now
		}
		if err := checkEvent(*e); err != nil {
			return fmt.Errorf("memory_events[%d]: %w", i, err)
		}
	}
	return nil
}

func importItems(ctx context.Context, tx *sql.Tx, f RoomFile) error {
	if f.Room != nil {
		if err := putConfig(ctx, tx, *f.Room); err != nil {
			return err
		}
	}
	for _, n := range f.Nodes {
		if err := upsertNode(ctx, tx, n); err != nil {
			return err
		}
	}
	for i, e := range f.Edges {
		if err := requireNodes(ctx, tx, e.Source, e.Target); err != nil {
			return fmt.Errorf("edges[%d]: %w", i, err)
		}
		if err := upsertEdge(ctx, tx, e); err != nil {
			return err
		}
	}
	for _, e := range f.MemoryEvents {
		if err := insertEvent(ctx, tx, e); err != nil {
			return err
		}
	}
	return nil
}

// completeNode fills a node's defaults and checks its fields.
func completeNode(n *Node, now time.Time) error {
	if n.ReviewStatus == "" {
		n.ReviewStatus = statusConfirmed
	}
	if n.CreatedBy == "" {
		n.CreatedBy = "user"
	}
	if n.CreatedAt.IsZero() {
		n.CreatedAt = now
	}
	if n.UpdatedAt.IsZero() {
		n.UpdatedAt = n.CreatedAt
	}
	return checkNode(*n)
}

// checkNode validates a node: vocabulary fields, an object of properties,
// and that nothing the Brain created is confirmed without a user.
func checkNode(n Node) error {
	switch {
	case !idPattern.MatchString(n.ID):
		return custody.Errorf(custody.EINVALID, "node id %q: use 1-128 letters, digits, _ . : - (no paths, addresses or prose)", n.ID)
	case !typePattern.MatchString(n.Type):
		return custody.Errorf(custody.EINVALID, "node %s: type %q: use a name of letters, digits and _", n.ID, n.Type)
	case !validStatus(n.ReviewStatus):
		return custody.Errorf(custody.EINVALID, "node %s: review_status %q: want proposed, confirmed, validated or rejected", n.ID, n.ReviewStatus)
	case n.Confidence != nil && (*n.Confidence < 0 || *n.Confidence > 1):
		return custody.Errorf(custody.EINVALID, "node %s: confidence must be within 0..1", n.ID)
	case n.CreatedBy == createdByBrain && (n.ReviewStatus == statusConfirmed || n.ReviewStatus == statusValidated) &&
		(n.ConfirmedBy == "" || n.ConfirmedBy == createdByBrain):
		return custody.Errorf(custody.EINVALID, "node %s: the Brain's proposals are confirmed only by a named user", n.ID)
	}
	return checkObject("node "+n.ID+" properties", n.Properties)
}

func validStatus(s string) bool {
	switch s {
	case statusProposed, statusConfirmed, statusValidated, statusRejected:
		return true
	}
	return false
}

// checkEdge validates an edge's ids and type.
func checkEdge(e *Edge) error {
	if e.CreatedBy == "" {
		e.CreatedBy = "user"
	}
	switch {
	case !idPattern.MatchString(e.Source) || !idPattern.MatchString(e.Target):
		return custody.Errorf(custody.EINVALID, "edge %q -> %q: source and target must be node ids", e.Source, e.Target)
	case !edgeTypePattern.MatchString(e.Type):
		return custody.Errorf(custody.EINVALID, "edge %s -> %s: type %q: use UPPER_SNAKE_CASE", e.Source, e.Target, e.Type)
	}
	return checkObject("edge properties", e.Properties)
}

// checkObject refuses raw JSON that is present but not an object.
func checkObject(what string, raw json.RawMessage) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return custody.Errorf(custody.EINVALID, "%s: want a JSON object", what)
	}
	return nil
}

// objectOrEmpty returns raw compacted, or {} when empty.
func objectOrEmpty(raw json.RawMessage) []byte {
	if len(bytes.TrimSpace(raw)) == 0 {
		return []byte("{}")
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

// upsertNode inserts n or replaces the node with its id.
func upsertNode(ctx context.Context, x execer, n Node) error {
	var conf any
	if n.Confidence != nil {
		conf = *n.Confidence
	}
	_, err := x.ExecContext(ctx, `INSERT INTO nodes (`+nodeColumns+`) VALUES (?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT (id) DO UPDATE SET type = excluded.type, properties = excluded.properties,
		source_section = excluded.source_section, confidence = excluded.confidence,
		review_status = excluded.review_status, created_by = excluded.created_by,
		confirmed_by = excluded.confirmed_by, created_at = excluded.created_at,
		updated_at = excluded.updated_at`,
		n.ID, n.Type, string(objectOrEmpty(n.Properties)), n.SourceSection, conf, n.ReviewStatus,
		n.CreatedBy, n.ConfirmedBy, n.CreatedAt.UnixMilli(), n.UpdatedAt.UnixMilli())
	if err != nil {
		return fmt.Errorf("write node %s: %w", n.ID, err)
	}
	return nil
}

// upsertEdge inserts e or replaces its properties.
func upsertEdge(ctx context.Context, x execer, e Edge) error {
	_, err := x.ExecContext(ctx, `INSERT INTO edges (source, type, target, properties, created_by)
		VALUES (?,?,?,?,?) ON CONFLICT (source, type, target) DO UPDATE
		SET properties = excluded.properties, created_by = excluded.created_by`,
		e.Source, e.Type, e.Target, string(objectOrEmpty(e.Properties)), e.CreatedBy)
	if err != nil {
		return fmt.Errorf("write edge %s -%s-> %s: %w", e.Source, e.Type, e.Target, err)
	}
	return nil
}

// requireNodes returns EINVALID unless every id names a node.
func requireNodes(ctx context.Context, tx *sql.Tx, ids ...string) error {
	for _, id := range ids {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM nodes WHERE id = ?`, id).Scan(&one)
		if err == sql.ErrNoRows {
			return custody.Errorf(custody.EINVALID, "no node %q in the room", id)
		}
		if err != nil {
			return fmt.Errorf("look up node %s: %w", id, err)
		}
	}
	return nil
}
