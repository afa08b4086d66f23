package brain

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/custody-dev/custody"
)

// Config is a room's settings.
type Config struct {
	// Stage is the packet's room_stage; "unknown" when empty.
	Stage string `json:"stage,omitempty"`
	// JTBD is the job to be done; it leaves the room only as a projection.
	JTBD string `json:"jtbd,omitempty"`
	// JTBDTags are matched against opportunity tags.
	JTBDTags []string `json:"jtbd_tags,omitempty"`
	// Operator is the active operator; JUST_TALK when empty.
	Operator string `json:"operator,omitempty"`
	// PrivacyMode is the room's default mode; it can lower what a packet
	// shows, never raise it past what the wire accepts.
	PrivacyMode string `json:"privacy_mode,omitempty"`
	// FrameworkChain is a chain hint fetched earlier, sent when present.
	FrameworkChain *FrameworkChainHint `json:"framework_chain,omitempty"`
}

// defaultOperator is the operator when the room names none.
const defaultOperator = "JUST_TALK"

// defaultStage is the room_stage when the room names none.
const defaultStage = "unknown"

// check validates the config's vocabulary fields.
func (c Config) check() error {
	if c.Stage != "" && !labelPattern.MatchString(c.Stage) {
		return custody.Errorf(custody.EINVALID, "room.stage %q: use a short label of letters, digits, space, - or _", c.Stage)
	}
	if c.Operator != "" && !operatorPattern.MatchString(c.Operator) {
		return custody.Errorf(custody.EINVALID, "room.operator %q: use an upper-case name such as JUST_TALK", c.Operator)
	}
	if c.FrameworkChain != nil {
		return c.FrameworkChain.check()
	}
	return nil
}

// check validates the ids and the time of a chain hint. Its counts and
// scope are left to the wire contract, which refuses what is out of range.
func (h *FrameworkChainHint) check() error {
	for i, e := range h.Edges {
		for _, s := range []*string{e.From, e.To} {
			if s != nil && !idPattern.MatchString(*s) {
				return custody.Errorf(custody.EINVALID, "room.framework_chain.edges[%d]: %q is not an id", i, *s)
			}
		}
	}
	if h.BrainSnapshotID != nil && !idPattern.MatchString(*h.BrainSnapshotID) {
		return custody.Errorf(custody.EINVALID, "room.framework_chain.brain_snapshot_id is not an id")
	}
	if _, err := time.Parse(time.RFC3339, h.FetchedAt); err != nil {
		return custody.Errorf(custody.EINVALID, "room.framework_chain.fetched_at: want RFC 3339")
	}
	return nil
}

// Config returns the room's settings; the zero Config when none are set.
func (r *Room) Config(ctx context.Context) (Config, error) {
	var doc string
	err := r.db.QueryRowContext(ctx, `SELECT value FROM room_config WHERE key = 'room'`).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return Config{}, nil
	}
	if err != nil {
		return Config{}, fmt.Errorf("read room config: %w", err)
	}
	var c Config
	if err := json.Unmarshal([]byte(doc), &c); err != nil {
		return Config{}, fmt.Errorf("decode room config: %w", err)
	}
	return c, nil
}

func putConfig(ctx context.Context, tx *sql.Tx, c Config) error {
	doc, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("encode room config: %w", err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO room_config (key, value) VALUES ('room', ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, string(doc))
	if err != nil {
		return fmt.Errorf("write room config: %w", err)
	}
	return nil
}
