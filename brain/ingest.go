package brain

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/custody-dev/custody"
)

// defaultInsightConfidence is an insight's confidence when the Brain gives
// none.
const defaultInsightConfidence = 0.5

// IngestReport says what one Ingest wrote and what it turned away.
type IngestReport struct {
	// Nodes are the insight ids written, new or updated in place.
	Nodes []string `json:"nodes"`
	// Edges counts the proposed edges written.
	Edges int `json:"edges"`
	// Skipped are proposed edges with a missing field or an unknown node.
	Skipped []string `json:"skipped"`
	// Rejected are proposed edges whose type is outside the allow-list.
	Rejected []string `json:"rejected"`
}

// Ingest stores a Brain reply as proposals, in one transaction: each
// suggestion becomes node brain_insight:<job>:<index> (review_status
// proposed, created_by brain, confidence 0.5 unless given); ingesting the
// same id again updates it in place and keeps its review status. Proposed
// edges with a missing field or naming an unknown node are skipped, those
// of a type outside proposableEdgeTypes are rejected. One
// brain_suggestion_received memory event about focus records the call. Any
// failure rolls the whole batch back.
func (r *Room) Ingest(ctx context.Context, job, focus string, resp Response) (IngestReport, error) {
	if !knownJob(job) {
		return IngestReport{}, custody.Errorf(custody.EINVALID, "unknown job %q", job)
	}
	rep := IngestReport{Nodes: []string{}, Skipped: []string{}, Rejected: []string{}}
	now := r.now().UTC().Truncate(time.Millisecond)
	err := r.inTx(ctx, func(tx *sql.Tx) error {
		for i, s := range resp.Suggestions {
			id, err := ingestSuggestion(ctx, tx, job, i, s, now)
			if err != nil {
				return fmt.Errorf("suggestion %d: %w", i, err)
			}
			rep.Nodes = append(rep.Nodes, id)
		}
		for _, s := range resp.Suggestions {
			if err := ingestEdges(ctx, tx, job, s.GraphUpdatesProposed, &rep); err != nil {
				return err
			}
		}
		ev, err := r.event(eventSuggestionReceived, focusOrEmpty(focus), map[string]any{"job": job,
			"nodes": rep.Nodes, "edges": rep.Edges, "skipped": len(rep.Skipped), "rejected": len(rep.Rejected)})
		if err != nil {
			return err
		}
		return insertEvent(ctx, tx, ev)
	})
	if err != nil {
		return IngestReport{}, err
	}
	return rep, nil
}

func focusOrEmpty(id string) string {
	if idPattern.MatchString(id) {
		return id
	}
	return ""
}

// insightProps is what an insight node keeps of a suggestion.
type insightProps struct {
	Job         string  `json:"job"`
	Summary     string  `json:"summary,omitempty"`
	Methodology *string `json:"methodology,omitempty"`
	Body        string  `json:"body,omitempty"`
}

// ingestSuggestion writes one insight node and returns its id. It refuses
// to overwrite a node the Brain did not create.
func ingestSuggestion(ctx context.Context, tx *sql.Tx, job string, pos int, s Suggestion, now time.Time) (string, error) {
	idx := pos
	if s.SuggestionIndex != nil {
		idx = *s.SuggestionIndex
	}
	id := insightID(job, idx)
	conf := defaultInsightConfidence
	if s.Confidence != nil {
		conf = *s.Confidence
	}
	n := Node{ID: id, Type: "brain_insight", ReviewStatus: statusProposed, CreatedBy: createdByBrain,
		Confidence: &conf, CreatedAt: now, UpdatedAt: now}
	props, err := json.Marshal(insightProps{Job: job, Summary: s.Summary, Methodology: s.Methodology, Body: s.Body})
	if err != nil {
		return "", fmt.Errorf("encode insight %s: %w", id, err)
	}
	n.Properties = props
	if err := checkNode(n); err != nil {
		return "", err
	}
	var by string
	err = tx.QueryRowContext(ctx, `SELECT created_by FROM nodes WHERE id = ?`, id).Scan(&by)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return id, upsertNode(ctx, tx, n)
	case err != nil:
		return "", fmt.Errorf("look up %s: %w", id, err)
	case by != createdByBrain:
		return "", custody.Errorf(custody.ECONFLICT, "node %s exists and was not created by the Brain", id)
	}
	_, err = tx.ExecContext(ctx, `UPDATE nodes SET properties = ?, confidence = ?, updated_at = ? WHERE id = ?`,
		string(props), conf, now.UnixMilli(), id)
	if err != nil {
		return "", fmt.Errorf("update insight %s: %w", id, err)
	}
	return id, nil
}

// ingestEdges writes the proposed edges that pass, reporting the others.
func ingestEdges(ctx context.Context, tx *sql.Tx, job string, ups []GraphUpdate, rep *IngestReport) error {
	allowed := proposableEdgeTypes()
	for _, u := range ups {
		label := u.Source + " -" + u.Type + "-> " + u.Target
		if u.Source == "" || u.Target == "" || u.Type == "" {
			rep.Skipped = append(rep.Skipped, label)
			continue
		}
		if !slices.Contains(allowed, u.Type) {
			rep.Rejected = append(rep.Rejected, label)
			continue
		}
		if !idPattern.MatchString(u.Source) || !idPattern.MatchString(u.Target) ||
			requireNodes(ctx, tx, u.Source, u.Target) != nil {
			rep.Skipped = append(rep.Skipped, label)
			continue
		}
		if err := upsertProposedEdge(ctx, tx, job, u); err != nil {
			return err
		}
		rep.Edges++
	}
	return nil
}

// upsertProposedEdge writes a Brain edge; it never changes a user's edge.
func upsertProposedEdge(ctx context.Context, tx *sql.Tx, job string, u GraphUpdate) error {
	conf := defaultInsightConfidence
	if u.Confidence != nil {
		conf = *u.Confidence
	}
	props, err := json.Marshal(map[string]any{"review_status": statusProposed, "job": job, "confidence": conf})
	if err != nil {
		return fmt.Errorf("encode proposed edge: %w", err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO edges (source, type, target, properties, created_by)
		VALUES (?, ?, ?, ?, 'brain') ON CONFLICT (source, type, target) DO UPDATE
		SET properties = excluded.properties WHERE edges.created_by = 'brain'`,
		u.Source, u.Type, u.Target, string(props))
	if err != nil {
		return fmt.Errorf("write proposed edge %s -%s-> %s: %w", u.Source, u.Type, u.Target, err)
	}
	return nil
}
