package brain

import (
	"cmp"
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
// proposed, created_by brain, confidence 0.5 unless given). Ingesting the
// same id again updates it in place only while it is still a proposal: a
// node a user reviewed (confirmed, validated, rejected) is never changed,
// and a different suggestion about it becomes a new proposal,
// brain_insight:<job>:<index>.r<N>, whose "beside" property names the
// reviewed node (the same words again are not proposed twice). Proposed
// edges follow their insight to the id it was stored under. Proposed
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
		storedAs := map[string]string{}
		for i, s := range resp.Suggestions {
			base, id, err := ingestSuggestion(ctx, tx, job, i, s, now)
			if err != nil {
				return fmt.Errorf("suggestion %d: %w", i, err)
			}
			storedAs[base] = id
			rep.Nodes = append(rep.Nodes, id)
		}
		for _, s := range resp.Suggestions {
			if err := ingestEdges(ctx, tx, job, storedAs, s.GraphUpdatesProposed, &rep); err != nil {
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
	// Beside names the reviewed insight this proposal would revise: the
	// two are shown side by side, and the reviewed one never changes.
	Beside string `json:"beside,omitempty"`
}

// maxRevisions bounds the proposals standing beside one reviewed insight.
const maxRevisions = 100

// ingestSuggestion writes one insight node and returns the id the
// suggestion names (its base) and the id it was stored under. It refuses
// to overwrite a node the Brain did not create and never changes a node a
// user reviewed.
func ingestSuggestion(ctx context.Context, tx *sql.Tx, job string, pos int, s Suggestion, now time.Time) (base, id string, err error) {
	idx := pos
	if s.SuggestionIndex != nil {
		idx = *s.SuggestionIndex
	}
	base = insightID(job, idx)
	conf := defaultInsightConfidence
	if s.Confidence != nil {
		conf = *s.Confidence
	}
	props := insightProps{Job: job, Summary: s.Summary, Methodology: s.Methodology, Body: s.Body}
	for rev := 1; rev <= maxRevisions; rev++ {
		id = base
		if rev > 1 {
			id = fmt.Sprintf("%s.r%d", base, rev)
			props.Beside = base
		}
		done, err := putInsight(ctx, tx, id, props, conf, now)
		if err != nil || done {
			return base, id, err
		}
	}
	return "", "", custody.Errorf(custody.ECONFLICT, "insight %s already has %d revisions", base, maxRevisions)
}

// putInsight writes insight id when it is new or still a Brain proposal,
// and reports whether the suggestion is settled there: written, or the
// same words a user already reviewed. A reviewed node with other words
// is left as it is (done false), and the caller tries the next revision.
func putInsight(ctx context.Context, tx *sql.Tx, id string, p insightProps, conf float64, now time.Time) (bool, error) {
	raw, err := json.Marshal(p)
	if err != nil {
		return false, fmt.Errorf("encode insight %s: %w", id, err)
	}
	n := Node{ID: id, Type: "brain_insight", ReviewStatus: statusProposed, CreatedBy: createdByBrain,
		Confidence: &conf, CreatedAt: now, UpdatedAt: now, Properties: raw}
	if err := checkNode(n); err != nil {
		return false, err
	}
	var by, status, cur string
	err = tx.QueryRowContext(ctx, `SELECT created_by, review_status, properties FROM nodes WHERE id = ?`, id).Scan(&by, &status, &cur)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return true, upsertNode(ctx, tx, n)
	case err != nil:
		return false, fmt.Errorf("look up %s: %w", id, err)
	case by != createdByBrain:
		return false, custody.Errorf(custody.ECONFLICT, "node %s exists and was not created by the Brain", id)
	case status != statusProposed:
		return sameWords(cur, p), nil
	}
	_, err = tx.ExecContext(ctx, `UPDATE nodes SET properties = ?, confidence = ?, updated_at = ? WHERE id = ?`,
		string(raw), conf, now.UnixMilli(), id)
	if err != nil {
		return false, fmt.Errorf("update insight %s: %w", id, err)
	}
	return true, nil
}

// sameWords reports whether the stored insight properties say what p
// says, whichever insight each stands beside.
func sameWords(stored string, p insightProps) bool {
	var cur insightProps
	if json.Unmarshal([]byte(stored), &cur) != nil {
		return false
	}
	cur.Beside, p.Beside = "", ""
	return cur.Job == p.Job && cur.Summary == p.Summary && cur.Body == p.Body &&
		(cur.Methodology == nil) == (p.Methodology == nil) && (cur.Methodology == nil || *cur.Methodology == *p.Methodology)
}

// ingestEdges writes the proposed edges that pass, reporting the others.
func ingestEdges(ctx context.Context, tx *sql.Tx, job string, storedAs map[string]string, ups []GraphUpdate, rep *IngestReport) error {
	allowed := proposableEdgeTypes()
	for _, u := range ups {
		u.Source, u.Target = cmp.Or(storedAs[u.Source], u.Source), cmp.Or(storedAs[u.Target], u.Target)
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
