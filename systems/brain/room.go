package brain

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/custody-dev/custody"
	_ "modernc.org/sqlite" // the pure Go SQLite driver, registered as "sqlite"
)

// roomSchemaVersion is stored in PRAGMA user_version.
const roomSchemaVersion = 1

// roomSchema creates a room. The CHECK constraints hold the vocabulary
// rules even against a writer that bypasses this package, and the last one
// keeps the promise that nothing the Brain proposed is confirmed without a
// user.
const roomSchema = `
CREATE TABLE IF NOT EXISTS nodes (
	id             TEXT PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 128 AND id NOT GLOB '*[^A-Za-z0-9_.:-]*'),
	type           TEXT NOT NULL CHECK (length(type) BETWEEN 1 AND 64 AND type NOT GLOB '*[^A-Za-z0-9_]*'),
	properties     TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(properties)),
	source_section TEXT NOT NULL DEFAULT '',
	confidence     REAL CHECK (confidence IS NULL OR confidence BETWEEN 0 AND 1),
	review_status  TEXT NOT NULL CHECK (review_status IN ('proposed','confirmed','validated','rejected')),
	created_by     TEXT NOT NULL DEFAULT 'user',
	confirmed_by   TEXT NOT NULL DEFAULT '',
	created_at     INTEGER NOT NULL,
	updated_at     INTEGER NOT NULL,
	CHECK (created_by <> 'brain' OR review_status IN ('proposed','rejected') OR (confirmed_by <> '' AND confirmed_by <> 'brain'))
);
CREATE INDEX IF NOT EXISTS nodes_type_status ON nodes (type, review_status);
-- The opportunity bank: what scoring needs, in the index itself, so that
-- loading thousands of opportunities reads no table pages.
CREATE INDEX IF NOT EXISTS nodes_opportunity_bank
	ON nodes (id, json_extract(properties, '$.hsi'), json_extract(properties, '$.tags'))
	WHERE type = 'opportunity' AND review_status IN ('proposed', 'confirmed', 'validated');
CREATE TABLE IF NOT EXISTS edges (
	source     TEXT NOT NULL REFERENCES nodes (id),
	type       TEXT NOT NULL CHECK (length(type) BETWEEN 1 AND 64 AND type NOT GLOB '*[^A-Z0-9_]*'),
	target     TEXT NOT NULL REFERENCES nodes (id),
	properties TEXT NOT NULL DEFAULT '{}',
	created_by TEXT NOT NULL DEFAULT 'user',
	PRIMARY KEY (source, type, target)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS edges_target ON edges (target, type);
CREATE TABLE IF NOT EXISTS memory_events (
	seq            INTEGER PRIMARY KEY,
	id             TEXT NOT NULL UNIQUE CHECK (length(id) BETWEEN 1 AND 128 AND id NOT GLOB '*[^A-Za-z0-9_.:-]*'),
	event_type     TEXT NOT NULL CHECK (length(event_type) BETWEEN 1 AND 64 AND event_type NOT GLOB '*[^a-z0-9_]*'),
	target_node_id TEXT,
	payload        TEXT NOT NULL DEFAULT '{}',
	created_at     INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS memory_events_created ON memory_events (created_at);
CREATE TABLE IF NOT EXISTS room_config (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
);
-- counters.opportunities changes whenever an opportunity node does, by
-- any writer, so that a cached opportunity bank knows when it is stale.
CREATE TABLE IF NOT EXISTS counters (
	name TEXT PRIMARY KEY,
	n    INTEGER NOT NULL
);
INSERT OR IGNORE INTO counters (name, n) VALUES ('opportunities', 0);
CREATE TRIGGER IF NOT EXISTS opportunities_insert AFTER INSERT ON nodes WHEN new.type = 'opportunity'
BEGIN UPDATE counters SET n = n + 1 WHERE name = 'opportunities'; END;
CREATE TRIGGER IF NOT EXISTS opportunities_update AFTER UPDATE ON nodes
WHEN old.type = 'opportunity' OR new.type = 'opportunity'
BEGIN UPDATE counters SET n = n + 1 WHERE name = 'opportunities'; END;
CREATE TRIGGER IF NOT EXISTS opportunities_delete AFTER DELETE ON nodes WHEN old.type = 'opportunity'
BEGIN UPDATE counters SET n = n + 1 WHERE name = 'opportunities'; END;
`

// Room is a local knowledge graph kept in its own SQLite file: nodes,
// typed edges, memory events and the room's config. A Room is safe for
// concurrent use.
type Room struct {
	db   *sql.DB
	path string
	now  func() time.Time

	mu   sync.Mutex
	bank *opportunityBank // guarded by mu; nil until first used
}

// RoomOptions configures OpenRoom.
type RoomOptions struct {
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// OpenRoom opens the room at path, creating it when absent. It returns
// EUNAVAILABLE when the file cannot be opened or was written by a newer
// schema.
func OpenRoom(ctx context.Context, path string, opts RoomOptions) (*Room, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(1)")
	// Packets read a few dozen scattered rows of a large file: keep hot
	// pages in memory and read the rest through a mapping, not syscalls.
	q.Add("_pragma", "cache_size(-16000)")
	q.Add("_pragma", "mmap_size(268435456)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, &custody.Error{Kind: custody.EUNAVAILABLE, Message: "cannot open room " + path, Err: err}
	}
	r := &Room{db: db, path: path, now: opts.Now}
	if err := r.init(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return r, nil
}

// init creates the schema or checks that an existing one is known.
func (r *Room) init(ctx context.Context) error {
	var v int
	if err := r.db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return &custody.Error{Kind: custody.EUNAVAILABLE, Message: "cannot read room " + r.path, Err: err}
	}
	if v > roomSchemaVersion {
		return custody.Errorf(custody.EUNAVAILABLE,
			"room %s has schema version %d; this custody knows up to %d", r.path, v, roomSchemaVersion)
	}
	if _, err := r.db.ExecContext(ctx, roomSchema); err != nil {
		return &custody.Error{Kind: custody.EUNAVAILABLE, Message: "cannot create room " + r.path, Err: err}
	}
	if _, err := r.db.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, roomSchemaVersion)); err != nil {
		return fmt.Errorf("set room schema version: %w", err)
	}
	return nil
}

// Path returns the room's file name.
func (r *Room) Path() string { return r.path }

// Close closes the room's database.
func (r *Room) Close() error { return r.db.Close() }

// inTx runs fn in one write transaction: it commits only if fn returns nil,
// so a failure anywhere leaves the room as it was.
func (r *Room) inTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin room transaction: %w", err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit room transaction: %w", err)
	}
	return nil
}

// Node is one node of the room graph.
type Node struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	// Properties is a JSON object; it stays local. Only projections of its
	// texts ever reach a packet.
	Properties    json.RawMessage `json:"properties,omitempty"`
	SourceSection string          `json:"source_section,omitempty"`
	// Confidence is in [0,1]; nil means unknown (scored as 0.5).
	Confidence   *float64 `json:"confidence,omitempty"`
	ReviewStatus string   `json:"review_status,omitempty"`
	CreatedBy    string   `json:"created_by,omitempty"`
	// ConfirmedBy names the user who confirmed, validated or rejected
	// the node.
	ConfirmedBy string    `json:"confirmed_by,omitempty"`
	CreatedAt   time.Time `json:"created_at,omitzero"`
	UpdatedAt   time.Time `json:"updated_at,omitzero"`
}

// Edge is one typed, directed edge.
type Edge struct {
	Source     string          `json:"source"`
	Target     string          `json:"target"`
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties,omitempty"`
	CreatedBy  string          `json:"created_by,omitempty"`
}

// MemoryEvent records something that happened in the room.
type MemoryEvent struct {
	ID           string          `json:"id"`
	EventType    string          `json:"event_type"`
	TargetNodeID string          `json:"target_node_id,omitempty"`
	Payload      json.RawMessage `json:"payload,omitempty"`
	CreatedAt    time.Time       `json:"created_at,omitzero"`
}

const nodeColumns = `id, type, properties, source_section, confidence, review_status,
	created_by, confirmed_by, created_at, updated_at`

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

func scanNode(s scanner) (Node, error) {
	var n Node
	var props string
	var conf sql.NullFloat64
	var created, updated int64
	err := s.Scan(&n.ID, &n.Type, &props, &n.SourceSection, &conf, &n.ReviewStatus,
		&n.CreatedBy, &n.ConfirmedBy, &created, &updated)
	if err != nil {
		return Node{}, err
	}
	n.Properties = json.RawMessage(props)
	if conf.Valid {
		n.Confidence = &conf.Float64
	}
	n.CreatedAt, n.UpdatedAt = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	return n, nil
}

// Node returns one node; ENOTFOUND when absent.
func (r *Room) Node(ctx context.Context, id string) (Node, error) {
	row := r.db.QueryRowContext(ctx, `SELECT `+nodeColumns+` FROM nodes WHERE id = ?`, id)
	n, err := scanNode(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Node{}, custody.Errorf(custody.ENOTFOUND, "no node %q in the room", id)
	}
	if err != nil {
		return Node{}, fmt.Errorf("read node %s: %w", id, err)
	}
	return n, nil
}

// Nodes returns the nodes with the given review status ("" for all), by id.
func (r *Room) Nodes(ctx context.Context, status string) ([]Node, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT `+nodeColumns+` FROM nodes
		WHERE ? = '' OR review_status = ? ORDER BY id`, status, status)
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	defer rows.Close()
	var out []Node
	for rows.Next() {
		n, err := scanNode(rows)
		if err != nil {
			return nil, fmt.Errorf("list nodes: %w", err)
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// Counts returns how many nodes, edges and memory events the room holds.
func (r *Room) Counts(ctx context.Context) (nodes, edges, events int, err error) {
	row := r.db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM nodes),
		(SELECT count(*) FROM edges), (SELECT count(*) FROM memory_events)`)
	if err := row.Scan(&nodes, &edges, &events); err != nil {
		return 0, 0, 0, fmt.Errorf("count room: %w", err)
	}
	return nodes, edges, events, nil
}
